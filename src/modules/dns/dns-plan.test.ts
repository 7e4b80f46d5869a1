import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readMailServices } from '../../adapters/mail-services.js';
import { buildPlan, mtaStsId, mtaStsPolicy, reverseName, parseIp } from './dns-plan.js';
import { splitTxt, zoneTxt } from './txt.js';
import { writeBundle } from './live-bundle.js';
import type { DkimKeyRow } from './dkim.repository.js';

const key = (selector: string, algorithm: string, public_key: string): DkimKeyRow => ({
  id: `example.org/${selector}`, domain: 'example.org', selector, algorithm, bits: 2048, public_key, private_key: 'sealed', state: 'active', created_at: 0, activated_at: 0, retired_at: null,
});
const longKey = 'A'.repeat(392);

describe('TXT strings', () => {
  it('splits at 255 bytes, keeps everything, never cuts a multi-byte character', () => {
    const v = `v=DKIM1; k=rsa; p=${longKey}`;
    const parts = splitTxt(v);
    expect(parts.map((p) => Buffer.byteLength(p))).toEqual([255, v.length - 255]);
    expect(parts.join('')).toBe(v);
    const utf = 'é'.repeat(200);
    const u = splitTxt(utf);
    expect(u.every((p) => Buffer.byteLength(p) <= 255)).toBe(true);
    expect(u.join('')).toBe(utf);
    expect(splitTxt('')).toEqual(['']);
  });

  it('quotes each string and escapes quotes and backslashes', () => {
    expect(zoneTxt('a"b\\c')).toBe('"a\\"b\\\\c"');
  });
});

describe('the DNS plan', () => {
  const plan = buildPlan({ domain: 'Example.ORG', mailHost: 'mail.example.org', publicIp: '192.0.2.10', srsDomain: 'srs.example.net', dkim: [key('202611', 'rsa', longKey)] });

  it('lists every record with its purpose', () => {
    const byType = (type: string, name: string) => plan.records.find((r) => r.type === type && r.name === name);
    expect(byType('MX', 'example.org')?.value).toBe('10 mail.example.org.');
    expect(byType('A', 'mail.example.org')?.value).toBe('192.0.2.10');
    expect(byType('TXT', 'example.org')?.value).toBe('v=spf1 mx -all');
    expect(byType('TXT', '202611._domainkey.example.org')?.value).toBe(`v=DKIM1; k=rsa; p=${longKey}`);
    expect(byType('TXT', '_dmarc.example.org')?.value).toMatch(/^v=DMARC1; p=quarantine;/);
    expect(byType('TXT', '_mta-sts.example.org')?.value).toBe(`v=STSv1; id=${mtaStsId(mtaStsPolicy('mail.example.org'))}`);
    expect(byType('TXT', '_smtp._tls.example.org')?.value).toMatch(/^v=TLSRPTv1; rua=mailto:/);
    expect(byType('TXT', 'srs.example.net')?.value).toBe('v=spf1 a:mail.example.org -all');
    expect(byType('PTR', '10.2.0.192.in-addr.arpa')).toMatchObject({ value: 'mail.example.org.', where: 'reverse-zone' });
    for (const r of plan.records) expect(r.purpose.length).toBeGreaterThan(10);
    expect(plan.mta_sts_policy).toBe('version: STSv1\nmode: enforce\nmx: mail.example.org\nmax_age: 604800\n');
  });

  it('writes zone lines with the DKIM TXT split into 255-byte strings and the PTR commented', () => {
    const line = plan.zone.split('\n').find((l) => l.startsWith('202611._domainkey.example.org.'));
    const strings = [...(line ?? '').matchAll(/"([^"]*)"/g)].map((m) => m[1] ?? '');
    expect(strings.map((s) => s.length)).toEqual([255, `v=DKIM1; k=rsa; p=${longKey}`.length - 255]);
    expect(plan.zone).toMatch(/^; 10\.2\.0\.192\.in-addr\.arpa\. 3600 IN PTR mail\.example\.org\.$/m);
  });

  it('leaves out the SRS record when the SRS domain is the domain itself, and marks unknown values', () => {
    const p = buildPlan({ domain: 'example.org', mailHost: 'mail.example.org', srsDomain: 'example.org', dkim: [] });
    expect(p.records.filter((r) => r.name === 'example.org' && r.type === 'TXT')).toHaveLength(1);
    expect(p.records.find((r) => r.type === 'A')?.value).toBeNull();
    expect(p.zone).toMatch(/^; mail\.example\.org\. 3600 IN A <public IPv4>$/m);
  });

  it('comments out the lines that belong in another zone (a mail host or SRS domain elsewhere), naming where they go', () => {
    const p = buildPlan({ domain: 'example.org', mailHost: 'mail.example.net', publicIp: '192.0.2.10', srsDomain: 'srs.example.com', dkim: [] });
    const live = p.zone.split('\n').filter((l) => l !== '' && !l.startsWith(';') && !l.startsWith('$TTL'));
    // Every live line is inside example.org: a zone loader keeps each one.
    for (const l of live) expect(l.split(' ')[0]).toMatch(/(^|\.)example\.org\.$/);
    expect(p.zone).toMatch(/^; mail\.example\.net\. 3600 IN A 192\.0\.2\.10$/m);
    expect(p.zone).toMatch(/^; srs\.example\.com\. 3600 IN TXT "v=spf1 a:mail\.example\.net -all"$/m);
    expect(p.zone).toContain('; not in the zone of example.org: add it to the zone that holds mail.example.net');
    expect(p.zone).toContain('; not in the zone of example.org: add it to the zone that holds srs.example.com');
    // In the domain's own zone they stay live.
    expect(plan.zone).toMatch(/^mail\.example\.org\. 3600 IN A 192\.0\.2\.10$/m);
    // A name that only ends in the same letters is not inside the zone.
    expect(buildPlan({ domain: 'example.org', mailHost: 'mailexample.org', dkim: [] }).zone).toContain('add it to the zone that holds mailexample.org');
  });

  it('IPv6: an AAAA and an ip6.arpa PTR; a bad address is a 400', () => {
    expect(reverseName(parseIp('2001:db8::1'))).toBe('1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa');
    expect(buildPlan({ domain: 'example.org', mailHost: 'mail.example.org', publicIp: '2001:db8::1', dkim: [] }).records.find((r) => r.type === 'AAAA')?.value).toBe('2001:db8::1');
    expect(() => buildPlan({ domain: 'example.org', mailHost: 'mail.example.org', publicIp: '300.1.1.1', dkim: [] })).toThrow(/not an IPv4 or IPv6/);
  });
});

describe('the live bundle', () => {
  it('is one archive with the zone fragment, the policy, an nginx snippet and a README', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-bundle-test-'));
    try {
      const plan = buildPlan({ domain: 'example.org', mailHost: 'mail.example.org', publicIp: '192.0.2.10', dkim: [key('202611', 'rsa', longKey)] });
      const r = await writeBundle(plan, join(dir, 'b.tar.gz'));
      expect(execFileSync('tar', ['-tzf', r.path], { encoding: 'utf8' }).trim().split('\n').sort()).toEqual(
        ['mailsvc-dns-example.org/', ...['README.txt', 'mta-sts.txt', 'nginx-autoconfig.conf', 'nginx-mta-sts.conf', 'zone.txt'].map((f) => `mailsvc-dns-example.org/${f}`)].sort(),
      );
      execFileSync('tar', ['-xzf', r.path, '-C', dir]);
      expect(readFileSync(join(dir, 'mailsvc-dns-example.org/zone.txt'), 'utf8')).toBe(plan.zone);
      expect(readFileSync(join(dir, 'mailsvc-dns-example.org/mta-sts.txt'), 'utf8')).toBe(plan.mta_sts_policy);
      expect(readFileSync(join(dir, 'mailsvc-dns-example.org/nginx-mta-sts.conf'), 'utf8')).toContain('server_name mta-sts.example.org;');
      const autoconfig = readFileSync(join(dir, 'mailsvc-dns-example.org/nginx-autoconfig.conf'), 'utf8');
      expect(autoconfig).toContain('server_name autoconfig.example.org autodiscover.example.org;');
      expect(autoconfig).toContain('proxy_pass http://127.0.0.1:8080;');
      expect(autoconfig).toContain('location ~* ^/autodiscover/autodiscover\\.xml$ {');
      await expect(writeBundle(plan, join(dir, 'missing/dir/b.tar.gz'))).rejects.toThrow(/cannot write/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the mail clients\' records', () => {
  it('SRV records (RFC 6186) with the ports deploy/\'s Postfix and Dovecot files serve, implicit TLS preferred (RFC 8314), "." where nothing is offered, and the autoconfig/autodiscover names', async () => {
    const root = fileURLToPath(new URL('../../../deploy/', import.meta.url));
    const services = await readMailServices({ postfixMasterCf: join(root, 'postfix/master.cf.submission'), dovecotListeners: join(root, 'dovecot/conf.d/13-mailsvc-listeners.conf') });
    const plan = buildPlan({ domain: 'example.org', mailHost: 'mail.example.org', dkim: [], services });
    const srv = plan.records.filter((r) => r.type === 'SRV').map((r) => `${r.name} ${r.value}`);
    expect(srv).toEqual([
      '_submissions._tcp.example.org 0 1 465 mail.example.org.',
      '_submission._tcp.example.org 10 1 587 mail.example.org.',
      '_imaps._tcp.example.org 0 1 993 mail.example.org.',
      '_imap._tcp.example.org 10 1 143 mail.example.org.',
      '_pop3s._tcp.example.org 0 0 0 .',
      '_pop3._tcp.example.org 0 0 0 .',
    ]);
    expect(plan.zone).toMatch(/^_imaps\._tcp\.example\.org\. 3600 IN SRV 0 1 993 mail\.example\.org\.$/m);
    expect(plan.zone).toMatch(/^_pop3s\._tcp\.example\.org\. 3600 IN SRV 0 0 0 \.$/m);
    expect(plan.records.filter((r) => r.type === 'CNAME').map((r) => `${r.name} ${r.value}`)).toEqual([
      'mta-sts.example.org mail.example.org.',
      'autoconfig.example.org mail.example.org.',
      'autodiscover.example.org mail.example.org.',
    ]);
    // POP3 turned on in Dovecot's file: the records follow, nothing typed twice.
    const withPop = buildPlan({ domain: 'example.org', mailHost: 'mail.example.org', dkim: [], services: { ...services, pop3: [{ protocol: 'pop3', port: 995, security: 'tls' }] } });
    expect(withPop.records.find((r) => r.name === '_pop3s._tcp.example.org')?.value).toBe('0 1 995 mail.example.org.');
  });
});
