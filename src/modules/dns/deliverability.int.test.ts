import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipNotice } from '../../../test/helpers/services.js';
import { knotUnavailable, startKnot } from '../../../test/helpers/knot.js';
import type { Knot } from '../../../test/helpers/knot.js';
import { makeTestCa } from '../../../test/helpers/test-ca.js';
import type { TestCa } from '../../../test/helpers/test-ca.js';
import { startMtaStsServer } from '../../../test/helpers/mta-sts-server.js';
import type { MtaStsServer } from '../../../test/helpers/mta-sts-server.js';
import { startTlsPostfix } from '../../../test/helpers/postfix-tls.js';
import type { TlsPostfix } from '../../../test/helpers/postfix-tls.js';
import { openDnsModules } from '../../../test/helpers/dns-modules.js';
import type { DnsTestModules } from '../../../test/helpers/dns-modules.js';
import { splitTxt } from './txt.js';
import type { DeliverabilityReport } from './schema.js';
import { spkiSha256 } from './dane-spki.js';

/**
 * The deliverability check against real parts: knot serving the domain's zone
 * and the reverse zone (records from the DNS plan, changed with dynamic
 * updates), an HTTPS server with the MTA-STS policy and /health, and Postfix
 * offering STARTTLS, both with certificates from a CA made for the run.
 */
const why = knotUnavailable() ?? (process.getuid?.() === 0 ? null : 'Postfix needs root');
if (why) skipNotice('knot, postfix', why);

const D = 'example.test';
const P = 'plain.test';
const HOST = 'mail.example.test';
const IP = '127.0.0.1';

const txtLine = (name: string, value: string) => `update add ${name}. 60 TXT ${splitTxt(value).map((s) => `"${s}"`).join(' ')}`;
const status = (r: DeliverabilityReport) => Object.fromEntries(r.checks.map((c) => [c.id, c.status]));

describe.skipIf(why !== null)('deliverability check and report against knot, an HTTPS server and Postfix STARTTLS', () => {
  let knot: Knot;
  let ca: TestCa;
  let web: MtaStsServer;
  let smtp: TlsPostfix;
  let m: DnsTestModules;
  let dataDir: string;

  beforeAll(async () => {
    // The domain's zone is DNSSEC-signed by knot; plain.test is not.
    knot = await startKnot({ [D]: [], '0.0.127.in-addr.arpa': [`1 PTR ${HOST}.`], [P]: [`mail A ${IP}`] }, { signed: [D] });
    ca = makeTestCa([HOST, `mta-sts.${D}`]);
    smtp = await startTlsPostfix(ca.chain, ca.key, HOST);
    // The web server's port is known only once it listens; the policy comes from the plan below.
    web = await startMtaStsServer({ cert: ca.cert, key: ca.key }, D, HOST, '');
    dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-deliv-'));
    m = await openDnsModules(
      {
        MAILSVC_DATA_DIR: dataDir,
        MAILSVC_DNS_RESOLVER: knot.address,
        MAILSVC_DNS_AUTHORITATIVE: knot.address,
        MAILSVC_DELIVERABILITY_HTTPS_PORT: String(web.port),
        MAILSVC_DELIVERABILITY_SMTP_PORT: String(smtp.port),
        MAILSVC_OUTBOUND_ALLOW_HOSTS: `mta-sts.${D}:${web.port},${HOST}:${web.port}`,
        MAILSVC_RSPAMD_LOCAL_DIR: join(dataDir, 'no-rspamd/local.d'),
      },
      { ca: [ca.ca] },
    );
    await m.domains.service.createWithDkim(D);
    // The key Postfix serves is the mail host's DANE key (what the certs module sets when it issues the certificate).
    await m.dns.dane.setCurrent(HOST, spkiSha256(ca.cert));
    // Publish the whole plan, as the administrator following the README would.
    const plan = await m.dns.plan.plan(D, HOST, IP);
    web.state.policy = plan.mta_sts_policy;
    const lines = plan.records
      .filter((r) => r.where === 'zone' && r.value !== null)
      .map((r) => (r.type === 'TXT' ? txtLine(r.name, r.value ?? '') : `update add ${r.name}. 60 ${r.type} ${r.value}`));
    await knot.update(D, lines);
  }, 120_000);

  afterAll(async () => {
    await m?.close();
    await smtp?.stop();
    await web?.close();
    await knot?.stop();
    ca?.cleanup();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('is green when everything of the plan is published and served, asking each DNS question once', async () => {
    const r = await m.dns.deliverability.check(D, HOST, IP);
    expect(r.checks.filter((c) => c.status !== 'pass'), JSON.stringify(r.checks, null, 1)).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.checks.map((c) => c.id).sort()).toEqual(['address', 'dane-tlsa', 'dkim', 'dmarc', 'dnssec', 'https-health', 'mta-sts-dns', 'mta-sts-policy', 'mx', 'ptr', 'smtp-starttls', 'spf', 'tls-rpt']);
    // MX, A+AAAA of the host, TXT of the domain, _dmarc, the DKIM selector, _mta-sts, _smtp._tls, A+AAAA of mta-sts (zone);
    // the PTR (resolvers); the TLSA of _25._tcp.<host> (zone, with DO) and once more at the resolver (its AD flag).
    // The host's A is needed by four checks and asked once.
    expect(r.dns_queries).toBe(13);
    expect(r.checks.find((c) => c.id === 'dane-tlsa')?.detail).toContain(`matches 3 1 1 ${spkiSha256(ca.cert).slice(0, 16)}`);
    expect(r.checks.find((c) => c.id === 'dnssec')?.detail).toMatch(/every authoritative server .* signs its answers/);
    expect(r.checks.find((c) => c.id === 'smtp-starttls')?.detail).toMatch(/issued by mailsvc test CA, \d+ days to expiry/);
  }, 60_000);

  it('DANE: a TLSA record that names another key fails with the record of the key port 25 serves; the next key beside it passes', async () => {
    const served = spkiSha256(ca.cert);
    const other = 'ab'.repeat(32);
    const name = `_25._tcp.${HOST}`;
    await knot.update(D, [`update delete ${name}. TLSA`, `update add ${name}. 60 TLSA 3 1 1 ${other}`]);
    try {
      let r = await m.dns.deliverability.check(D, HOST, IP);
      const c = r.checks.find((x) => x.id === 'dane-tlsa');
      expect(c).toMatchObject({ status: 'fail', detail: expect.stringMatching(/serves a key that none of 3 1 1 abab.* names/) });
      expect(c?.fix).toContain(`Publish: ${name}. IN TLSA 3 1 1 ${served}`);
      expect(status(r).dnssec).toBe('pass');
      // During a key change both are published: the one port 25 serves matches.
      await knot.update(D, [`update add ${name}. 60 TLSA 3 1 1 ${served}`]);
      r = await m.dns.deliverability.check(D, HOST, IP);
      expect(status(r)['dane-tlsa']).toBe('pass');
    } finally {
      await knot.update(D, [`update delete ${name}. TLSA`, `update add ${name}. 60 TLSA 3 1 1 ${served}`]);
    }
  }, 60_000);

  it('DANE in a zone that is not DNSSEC-signed: DNSSEC and a missing or wrong TLSA record are recommendations (warn), never failures; the report stays ok', async () => {
    await m.domains.service.create(P);
    const host = `mail.${P}`;
    const name = `_25._tcp.${host}`;
    let r = await m.dns.deliverability.check(P, host);
    expect(r.checks.find((x) => x.id === 'dane-tlsa')).toMatchObject({
      status: 'warn',
      detail: expect.stringMatching(new RegExp(`^${name.replace(/\./g, '\\.')} has no TLSA record: senders cannot authenticate .* \\(recommended, not required: the zone is not DNSSEC-signed`)),
      fix: expect.stringContaining(`3 1 1 ${spkiSha256(ca.cert)}`),
    });
    expect(r.checks.find((x) => x.id === 'dnssec')).toMatchObject({ status: 'warn', detail: expect.stringMatching(/not DNSSEC-signed .*DANE is inert/) });
    expect(r.counts.warn).toBe(2);
    for (const id of ['dane-tlsa', 'dnssec']) expect(r.checks.find((x) => x.id === id)?.status, id).not.toBe('fail');
    // A record that names another key: still a recommendation while the zone is unsigned.
    await knot.update(P, [`update add ${name}. 60 TLSA 3 1 1 ${'cd'.repeat(32)}`]);
    r = await m.dns.deliverability.check(P, host);
    expect(r.checks.find((x) => x.id === 'dane-tlsa')).toMatchObject({ status: 'warn', detail: expect.stringMatching(/serves a key that none of 3 1 1 cdcd.* names/) });
    await knot.update(P, [`update delete ${name}. TLSA`, `update add ${name}. 60 TLSA 3 1 1 ${spkiSha256(ca.key)}`]);
    r = await m.dns.deliverability.check(P, host);
    expect(status(r)).toMatchObject({ 'dane-tlsa': 'pass', dnssec: 'warn' });
  }, 60_000);

  it('DANE in a DNSSEC-signed zone: a missing TLSA record fails', async () => {
    const name = `_25._tcp.${HOST}`;
    const served = spkiSha256(ca.cert);
    await knot.update(D, [`update delete ${name}. TLSA`]);
    try {
      const r = await m.dns.deliverability.check(D, HOST, IP);
      expect(status(r).dnssec).toBe('pass');
      expect(r.checks.find((x) => x.id === 'dane-tlsa')).toMatchObject({ status: 'fail', detail: `${name} has no TLSA record: senders cannot authenticate ${HOST} with DANE` });
    } finally {
      await knot.update(D, [`update add ${name}. 60 TLSA 3 1 1 ${served}`]);
    }
  }, 60_000);

  it('says what to fix: a second SPF record, DMARC p=none, a DKIM record that is not the signing key', async () => {
    const key = (await m.dns.dkim.keys(D))[0]!;
    await knot.update(D, [
      txtLine(D, 'v=spf1 a -all'),
      `update delete _dmarc.${D}. TXT`, txtLine(`_dmarc.${D}`, 'v=DMARC1; p=none'),
      `update delete ${key.record_name}. TXT`, txtLine(key.record_name, 'v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtest'),
    ]);
    try {
      const r = await m.dns.deliverability.check(D, HOST, IP);
      expect(status(r)).toMatchObject({ spf: 'fail', dmarc: 'fail', dkim: 'fail', mx: 'pass', ptr: 'pass' });
      expect(r.ok).toBe(false);
      expect(r.checks.find((c) => c.id === 'spf')?.detail).toMatch(/2 SPF records/);
      expect(r.checks.find((c) => c.id === 'dkim')?.fix).toContain(key.record_value);
      // The fix is the very record the plan asks for, not a weaker one.
      const planned = (await m.dns.plan.plan(D, HOST, IP)).records.find((x) => x.name === `_dmarc.${D}`)?.value;
      expect(planned).toMatch(/adkim=s; aspf=s/);
      expect(r.checks.find((c) => c.id === 'dmarc')?.fix).toContain(`Publish: _dmarc.${D}. IN TXT "${planned}"`);
    } finally {
      await knot.update(D, [
        `update delete ${D}. TXT "v=spf1 a -all"`,
        `update delete _dmarc.${D}. TXT`, txtLine(`_dmarc.${D}`, `v=DMARC1; p=quarantine; adkim=s; aspf=s; rua=mailto:dmarc-reports@${D}`),
        `update delete ${key.record_name}. TXT`, txtLine(key.record_name, key.record_value),
      ]);
    }
  }, 60_000);

  it('fails the MTA-STS policy whose mx does not cover the mail host, and the health endpoint that is down', async () => {
    const good = web.state.policy;
    web.state.policy = good.replace(`mx: ${HOST}`, 'mx: other.example.test');
    web.state.health = 503;
    try {
      const r = await m.dns.deliverability.check(D, HOST, IP);
      expect(status(r)).toMatchObject({ 'mta-sts-policy': 'fail', 'https-health': 'fail', 'mta-sts-dns': 'pass' });
    } finally {
      web.state.policy = good;
      web.state.health = 200;
    }
  }, 60_000);

  it('a DNS server that does not answer makes the DNS checks "could not determine", never "fail"', async () => {
    const silent = await openDnsModules({ MAILSVC_DNS_RESOLVER: '127.0.0.1:9', MAILSVC_DNS_AUTHORITATIVE: '127.0.0.1:9' });
    try {
      await silent.domains.service.create(D);
      const r = await silent.dns.deliverability.check(D, HOST);
      for (const id of ['mx', 'address', 'spf', 'dmarc', 'mta-sts-dns', 'tls-rpt', 'mta-sts-policy', 'https-health', 'smtp-starttls', 'dane-tlsa', 'dnssec']) expect(status(r)[id], id).toBe('unknown');
      expect(status(r).dkim).toBe('fail'); // no key made: known without asking
    } finally {
      await silent.close();
    }
  }, 60_000);

  it('report saves JSON and text and shows what changed since the previous report', async () => {
    const first = await m.dns.deliverability.report(D, HOST, IP);
    expect(first.changes).toEqual([]);
    for (const f of first.files) expect(existsSync(f)).toBe(true);
    expect(JSON.parse(readFileSync(first.files[0]!, 'utf8'))).toMatchObject({ id: first.id, ok: true });
    expect(readFileSync(first.files[1]!, 'utf8')).toMatch(/PASS {2}SPF/);
    web.state.health = 500;
    try {
      const second = await m.dns.deliverability.report(D, HOST, IP);
      expect(second.changes).toEqual([{ id: 'https-health', name: 'HTTPS health endpoint', from: 'pass', to: 'fail' }]);
      expect((await m.dns.deliverability.latest(D)).id).toBe(second.id);
    } finally {
      web.state.health = 200;
    }
  }, 60_000);
});
