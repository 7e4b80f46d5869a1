import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipNotice } from '../../../test/helpers/services.js';
import { knotUnavailable, startKnot } from '../../../test/helpers/knot.js';
import type { Knot } from '../../../test/helpers/knot.js';
import { makeTestCa } from '../../../test/helpers/test-ca.js';
import type { TestCa } from '../../../test/helpers/test-ca.js';
import { startFakeCloudflare } from '../../../test/helpers/cloudflare-server.js';
import type { FakeCloudflare, FakeRecord } from '../../../test/helpers/cloudflare-server.js';
import { openDnsModules } from '../../../test/helpers/dns-modules.js';
import type { DnsTestModules } from '../../../test/helpers/dns-modules.js';
import { sealedValues } from '../../../test/helpers/cli.js';
import { DkimRepository } from './dkim.repository.js';
import { txtContent } from './cloudflare-sync.service.js';

/**
 * `dns configure-cloudflare` and `dns sync-dkim` against a local HTTPS server
 * speaking Cloudflare API v4; what it stores goes into a real knot with
 * dynamic updates, and the records are read back from knot with kdig.
 */
const why = knotUnavailable();
if (why) skipNotice('knot', why);

const D = 'example.test';
const ZONE = { id: '023e105f4ecef8ad9ca31a8372d0c353', name: D, token: 'cf-test-token-0123456789abcdef' };

describe.skipIf(why !== null)('Cloudflare sync of the DKIM records, closing the loop through knot', () => {
  let knot: Knot;
  let ca: TestCa;
  let cf: FakeCloudflare;
  let m: DnsTestModules;
  const knotApply = async ({ op, before, after }: { op: string; before: FakeRecord | null; after: FakeRecord | null }) => {
    const lines: string[] = [];
    // A TLSA record is one of a set: only it goes (a TXT name holds one record).
    if (before && op !== 'create') lines.push(`update delete ${before.name}. ${before.type}${before.type === 'TLSA' ? ` ${before.content}` : ''}`);
    if (after) lines.push(`update add ${after.name}. ${after.ttl} ${after.type} ${after.content}`);
    await knot.update(D, lines);
  };

  beforeAll(async () => {
    knot = await startKnot({ [D]: [] });
    ca = makeTestCa(['127.0.0.1']);
    cf = await startFakeCloudflare({ cert: ca.cert, key: ca.key }, ZONE, knotApply);
    m = await openDnsModules(
      { MAILSVC_DNS_RESOLVER: knot.address, MAILSVC_DNS_AUTHORITATIVE: knot.address, MAILSVC_CLOUDFLARE_API_URL: cf.baseUrl, MAILSVC_OUTBOUND_ALLOW_HOSTS: `127.0.0.1:${cf.port}`, MAILSVC_DKIM_ED25519: 'yes', MAILSVC_RSPAMD_LOCAL_DIR: '/nonexistent/local.d' },
      { ca: [ca.ca] },
    );
    await m.domains.service.createWithDkim(D);
  }, 60_000);

  afterAll(async () => {
    await m?.close();
    await cf?.close();
    await knot?.stop();
    ca?.cleanup();
  });

  it('refuses a token Cloudflare refuses, or a zone that does not hold the domain, and stores nothing', async () => {
    await expect(m.dns.cloudflare.configure(D, { zoneId: ZONE.id, token: 'wrong', enabled: true })).rejects.toThrow(/refused the token .*Authentication error/);
    await expect(m.dns.cloudflare.configure(D, { zoneId: 'ffff', token: ZONE.token, enabled: true })).rejects.toThrow(/does not know that zone id/);
    await expect(m.dns.cloudflare.get(D)).rejects.toThrow(/No DNS sync set up/);
  });

  it('stores the zone id and the token sealed; the token is never in the view or a message', async () => {
    const v = await m.dns.cloudflare.configure(D, { zoneId: ZONE.id, token: ZONE.token, enabled: true });
    expect(v).toMatchObject({ domain: D, zone_id: ZONE.id, api_token_set: true, enabled: true });
    expect(JSON.stringify(v)).not.toContain(ZONE.token);
    const sealed = (await sealedValues(m.infra.db)).filter((s) => s.table === 'dns_sync');
    expect(sealed).toHaveLength(1);
    expect(sealed[0]?.value).not.toContain(ZONE.token);
  });

  it('--dry-run shows the diff and changes nothing', async () => {
    const before = cf.requests.length;
    const r = await m.dns.cloudflare.syncDkim(D, { dryRun: true });
    expect(r.changes.map((c) => c.action)).toEqual(['create', 'create']);
    expect(r.changed).toBe(0);
    expect(cf.records).toEqual([]);
    expect(cf.requests.slice(before).every((q) => q.startsWith('GET '))).toBe(true);
  });

  it('creates the records (never proxied, long TXT in 255-byte strings), reads them back, and knot serves them', async () => {
    const keys = await m.dns.dkim.keys(D);
    const r = await m.dns.cloudflare.syncDkim(D);
    expect(r).toMatchObject({ verified: true, changed: 2 });
    for (const k of keys) {
      const rec = cf.records.find((x) => x.name === k.record_name)!;
      expect(rec).toMatchObject({ type: 'TXT', proxied: false, comment: 'mailsvc:dkim' });
      expect(txtContent(rec.content)).toBe(k.record_value);
      const served = await knot.dig(k.record_name, 'TXT');
      expect(txtContent(served.join(' '))).toBe(k.record_value);
    }
    const rsa = cf.records.find((x) => x.name === keys.find((k) => k.algorithm === 'rsa')?.record_name)!;
    expect(rsa.content.split('" "').length).toBe(2);
  });

  it('is idempotent: a second run changes nothing', async () => {
    const writes = () => cf.requests.filter((q) => !q.startsWith('GET ')).length;
    const before = writes();
    const r = await m.dns.cloudflare.syncDkim(D);
    expect(r.changed).toBe(0);
    expect(r.changes.every((c) => c.action === 'keep')).toBe(true);
    expect(writes()).toBe(before);
  });

  it('walks every page, never touches records it does not own, and repairs a changed record of its own', async () => {
    const keys = await m.dns.dkim.keys(D);
    for (let i = 0; i < 230; i++) cf.records.push({ id: `other${i}`, type: 'TXT', name: `r${i}.${D}`, content: `"v${i}"`, ttl: 1, proxied: false, comment: null });
    const mine = cf.records.find((x) => x.name === keys[0]!.record_name)!;
    mine.content = '"v=DKIM1; k=rsa; p=stale"';
    const r = await m.dns.cloudflare.syncDkim(D);
    expect(cf.requests.some((q) => q.includes('page=3'))).toBe(true);
    expect(r.changes.find((c) => c.name === keys[0]!.record_name)).toMatchObject({ action: 'update', previous: 'v=DKIM1; k=rsa; p=stale' });
    expect(cf.records.filter((x) => x.id.startsWith('other'))).toHaveLength(230);
    cf.records = cf.records.filter((x) => !x.id.startsWith('other'));
  });

  it('retries after a 429 (Retry-After) and says so when the limit holds', async () => {
    cf.rateLimitNext = 2;
    await expect(m.dns.cloudflare.syncDkim(D)).resolves.toMatchObject({ changed: 0 });
    cf.rateLimitNext = 50;
    await expect(m.dns.cloudflare.syncDkim(D)).rejects.toThrow(/rate limit: still 429 after 3 retries/);
    cf.rateLimitNext = 0;
  }, 30_000);

  it('deletes the record of a retired key, and skips a record it does not own', async () => {
    const keys = await m.dns.dkim.keys(D);
    const ed = keys.find((k) => k.algorithm === 'ed25519')!;
    await new DkimRepository(m.infra.db).setState(D, [ed.selector], 'retired', Date.now());
    const rsa = keys.find((k) => k.algorithm === 'rsa')!;
    const mine = cf.records.find((x) => x.name === rsa.record_name)!;
    mine.comment = 'someone else';
    const r = await m.dns.cloudflare.syncDkim(D).catch((e: Error) => e);
    // The skipped record is not mailsvc's, so the read-back cannot confirm it: the run says so.
    expect(String(r)).toMatch(/read back differ/);
    expect(cf.records.find((x) => x.name === ed.record_name)).toBeUndefined();
    expect(await knot.dig(ed.record_name, 'TXT')).toEqual([]);
    const dry = await m.dns.cloudflare.syncDkim(D, { dryRun: true });
    expect(dry.changes).toEqual([expect.objectContaining({ action: 'skip', name: rsa.record_name })]);
    expect(cf.records.find((x) => x.name === rsa.record_name)?.comment).toBe('someone else');
  });

  it('publishes the DANE records of the mail host through the zone: the next key beside the current one, the old one withdrawn; a record it does not own is left alone', async () => {
    const host = `mail.${D}`;
    const name = `_25._tcp.${host}`;
    const [a, b] = ['a1'.repeat(32), 'b2'.repeat(32)];
    const tlsa = () => cf.records.filter((x) => x.type === 'TLSA').map((x) => [x.content, x.comment]).sort();
    cf.records.push({ id: 'foreign-tlsa', type: 'TLSA', name, content: `3 1 1 ${'f'.repeat(64)}`, ttl: 3600, proxied: false, comment: null });
    await m.dns.dane.setCurrent(host, a);
    expect(tlsa()).toEqual([[`3 1 1 ${a}`, 'mailsvc:dane'], [`3 1 1 ${'f'.repeat(64)}`, null]]);
    expect(await knot.dig(name, 'TLSA')).toEqual([`3 1 1 ${a.toUpperCase()}`]);
    // The next key: published through Cloudflare, knot (the authoritative server here) answers both, the TTL wait begins.
    const s = await m.dns.dane.prepareKeyChange(host, b);
    expect(s.state).toBe('waiting-ttl');
    expect(tlsa().filter(([, c]) => c === 'mailsvc:dane').map(([x]) => x)).toEqual([`3 1 1 ${a}`, `3 1 1 ${b}`]);
    expect((await knot.dig(name, 'TLSA')).sort()).toEqual([`3 1 1 ${a.toUpperCase()}`, `3 1 1 ${b.toUpperCase()}`]);
    // The TTL has passed (the stored deadline, moved as time would move it).
    await m.infra.db.updateTable('dane_keys').set({ wait_until: 0 }).where('mail_host', '=', host).execute();
    expect((await m.dns.dane.advance(host)).state).toBe('ready-to-deploy');
    expect((await m.dns.dane.completeKeyChange(host)).state).toBe('idle');
    expect(tlsa()).toEqual([[`3 1 1 ${b}`, 'mailsvc:dane'], [`3 1 1 ${'f'.repeat(64)}`, null]]);
    expect(await knot.dig(name, 'TLSA')).toEqual([`3 1 1 ${b.toUpperCase()}`]);
  });
});
