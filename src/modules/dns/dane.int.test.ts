import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { skipNotice } from '../../../test/helpers/services.js';
import { knotUnavailable, startKnot } from '../../../test/helpers/knot.js';
import type { Knot } from '../../../test/helpers/knot.js';
import { FakeClock } from '../../../test/helpers/app.js';
import { openDnsModules } from '../../../test/helpers/dns-modules.js';
import type { DnsTestModules } from '../../../test/helpers/dns-modules.js';
import { createDnsModule } from './index.js';
import { queryTlsa } from '../../adapters/dns/tlsa-query.js';

/**
 * The DANE key change against two real authoritative servers (knot; one DNSSEC-
 * signed by knot itself, one not) and a clock the test moves: the next key's
 * TLSA record is published first, and the new certificate may not be deployed
 * before every authoritative server answers both records and the TTL they
 * publish has passed; a service rebuilt from the database after a crash at
 * any state carries on from there.
 */
const why = knotUnavailable();
if (why) skipNotice('knot', why);

const Z = 'example.test';
const HOST = `mail.${Z}`;
const NAME = `_25._tcp.${HOST}`;
const A = 'a'.repeat(64);
const B = 'b'.repeat(62) + '01';
const C = 'c'.repeat(64);
const TTL = 300;

describe.skipIf(why !== null)('DANE key change', () => {
  let primary: Knot;
  let secondary: Knot;
  let m: DnsTestModules;
  let clock: FakeClock;
  let published: string[][];
  let crashPublish = 0;

  /** Writes these TLSA records at _25._tcp.<host> on one server (replacing what was there), as a zone's operator does. */
  const serve = async (k: Knot, spkis: readonly string[], ttl = TTL) => k.update(Z, [`update delete ${NAME}. TLSA`, ...spkis.map((s) => `update add ${NAME}. ${ttl} TLSA 3 1 1 ${s}`)]);
  const served = async (k: Knot) => {
    const a = await queryTlsa({ host: '127.0.0.1', port: k.port }, NAME);
    return a.kind === 'records' ? a.records.map((r) => r.data).sort() : [];
  };

  const open = (deps: { clock: FakeClock }) =>
    openDnsModules(
      { MAILSVC_DNS_RESOLVER: primary.address, MAILSVC_DNS_AUTHORITATIVE: `${primary.address},${secondary.address}` },
      {
        // The publisher writes the plan's TLSA records to the primary only (a DNS provider's API); the secondary lags until the test copies them.
        publishTlsa: async (host) => {
          if (crashPublish > 0) {
            crashPublish -= 1;
            throw new Error('the process died while publishing (simulated crash)');
          }
          const spkis = (await m.dns.dane.records(host)).map((r) => r.data);
          published.push(spkis);
          await serve(primary, spkis);
          return true;
        },
      },
      { clock: deps.clock },
    );

  beforeEach(async () => {
    [primary, secondary] = await Promise.all([startKnot({ [Z]: [] }, { signed: [Z] }), startKnot({ [Z]: [] })]);
    clock = new FakeClock(Date.UTC(2026, 10, 1));
    published = [];
    crashPublish = 0;
    m = await open({ clock });
    await m.domains.service.create(Z);
    await m.dns.dane.setCurrent(HOST, A.toUpperCase());
    await serve(secondary, [A]);
  }, 60_000);

  afterEach(async () => {
    await m?.close();
    await primary?.stop();
    await secondary?.stop();
  });

  it('publishes the next key first and allows the deployment only once every server answers both records and the TTL passed', async () => {
    expect(await served(primary)).toEqual([A]);
    expect(await m.dns.dane.status(HOST)).toMatchObject({ state: 'idle', current_spki: A, next_spki: null, records: [`3 1 1 ${A}`], deploy_allowed: false });
    // A renewal that keeps its key: nothing changes.
    expect(await m.dns.dane.prepareKeyChange(HOST, A)).toMatchObject({ state: 'idle', next_spki: null });
    expect(published).toHaveLength(1);

    let s = await m.dns.dane.prepareKeyChange(HOST, B);
    expect(s).toMatchObject({ state: 'awaiting-visibility', current_spki: A, next_spki: B, deploy_allowed: false });
    expect(published.at(-1)).toEqual([A, B]);
    expect(await served(primary)).toEqual([A, B].sort());
    // The secondary still answers only the current record.
    expect(s.waiting).toContain(`127.0.0.1:${secondary.port} does not answer ${NAME}. TLSA 3 1 1 ${B.slice(0, 12)}`);
    await expect(m.dns.dane.completeKeyChange(HOST)).rejects.toMatchObject({ code: 'conflict' });
    expect((await m.dns.dane.status(HOST)).state).toBe('awaiting-visibility');

    // The plan holds both records during the change.
    const plan = await m.dns.plan.plan(Z, HOST);
    expect(plan.records.filter((r) => r.type === 'TLSA').map((r) => [r.name, r.value])).toEqual([[NAME, `3 1 1 ${A}`], [NAME, `3 1 1 ${B}`]]);
    expect(plan.zone).toContain(`${NAME}. 3600 IN TLSA 3 1 1 ${B}`);

    // The secondary gets the next record without the current one: still not both.
    await serve(secondary, [B]);
    s = await m.dns.dane.advance(HOST);
    expect(s.state).toBe('awaiting-visibility');
    expect(s.waiting).toContain(`TLSA 3 1 1 ${A.slice(0, 12)}`);

    await serve(secondary, [A, B], 600);
    const visibleAt = clock.now();
    s = await m.dns.dane.advance(HOST);
    // The largest TTL the servers publish (600 on the secondary), stored.
    expect(s).toMatchObject({ state: 'waiting-ttl', deploy_allowed: false, wait_until: new Date(visibleAt + 600_000).toISOString() });
    clock.advance(600_000 - 1);
    expect((await m.dns.dane.advance(HOST)).state).toBe('waiting-ttl');
    await expect(m.dns.dane.completeKeyChange(HOST)).rejects.toThrow(/may not be deployed yet/);
    clock.advance(1);
    s = await m.dns.dane.advance(HOST);
    expect(s).toMatchObject({ state: 'ready-to-deploy', deploy_allowed: true, records: [`3 1 1 ${A}`, `3 1 1 ${B}`] });
    // Advancing again keeps it there until the certs module says the new certificate is deployed.
    expect((await m.dns.dane.advance(HOST)).state).toBe('ready-to-deploy');

    s = await m.dns.dane.completeKeyChange(HOST);
    expect(s).toMatchObject({ state: 'idle', current_spki: B, next_spki: null, records: [`3 1 1 ${B}`] });
    expect(published.at(-1)).toEqual([B]);
    expect(await served(primary)).toEqual([B]);
    expect((await m.dns.plan.plan(Z, HOST)).records.filter((r) => r.type === 'TLSA').map((r) => r.value)).toEqual([`3 1 1 ${B}`]);
    // Idempotent: completing again changes nothing.
    expect((await m.dns.dane.completeKeyChange(HOST)).current_spki).toBe(B);
  });

  it('another next key during a change starts the wait again; the current key after all calls the change off', async () => {
    await serve(secondary, [A, B]);
    expect((await m.dns.dane.prepareKeyChange(HOST, B)).state).toBe('waiting-ttl');
    // The key made for the new certificate was replaced (a failed issuance made another): C's record must be waited for.
    let s = await m.dns.dane.prepareKeyChange(HOST, C);
    expect(s).toMatchObject({ state: 'awaiting-visibility', next_spki: C });
    expect(await served(primary)).toEqual([A, C].sort());
    s = await m.dns.dane.prepareKeyChange(HOST, A);
    expect(s).toMatchObject({ state: 'idle', current_spki: A, next_spki: null });
    expect(await served(primary)).toEqual([A]);
  });

  it('refuses bad input with a clear error and changes nothing', async () => {
    await expect(m.dns.dane.prepareKeyChange(HOST, 'xyz')).rejects.toMatchObject({ code: 'bad_request', detail: expect.stringMatching(/64 hex digits/) });
    await expect(m.dns.dane.setCurrent('not a host', A)).rejects.toMatchObject({ code: 'bad_request' });
    await expect(m.dns.dane.status('other.example.test')).rejects.toMatchObject({ code: 'not_found' });
    await expect(m.dns.dane.prepareKeyChange('other.example.test', B)).rejects.toMatchObject({ code: 'not_found' });
    await m.dns.dane.prepareKeyChange(HOST, B);
    await expect(m.dns.dane.setCurrent(HOST, C)).rejects.toMatchObject({ code: 'conflict' });
    expect(await m.dns.dane.status(HOST)).toMatchObject({ current_spki: A, next_spki: B });
  });

  it('resumes after a crash at every state with a service rebuilt from the database, never allowing the deployment early', async () => {
    // A crash while publishing the next record: the state stays publishing-next, with the error.
    crashPublish = 1;
    await expect(m.dns.dane.prepareKeyChange(HOST, B)).rejects.toThrow(/simulated crash/);
    expect(await m.dns.dane.status(HOST)).toMatchObject({ state: 'publishing-next', next_spki: B, last_error: expect.stringMatching(/simulated crash/) });
    expect(await served(primary)).toEqual([A]);

    // Each step from here on runs in a service built anew over the same database (a restarted process).
    const rebuilt = () => createDnsModule(m.infra, { domains: m.domains.service, keyBits: () => 2048, publishTlsa: async (host) => (await serve(primary, (await m.dns.dane.records(host)).map((r) => r.data)), true) }).dane;
    let s = await rebuilt().advance(HOST);
    expect(s).toMatchObject({ state: 'awaiting-visibility', last_error: null });
    expect(await served(primary)).toEqual([A, B].sort());
    await serve(secondary, [A, B]);
    s = await rebuilt().advance(HOST);
    expect(s.state).toBe('waiting-ttl');
    const until = s.wait_until;
    // The deadline survives the restart: it is not moved on by a second look.
    clock.advance(TTL * 1000 - 1);
    s = await rebuilt().advance(HOST);
    expect(s).toMatchObject({ state: 'waiting-ttl', wait_until: until, deploy_allowed: false });
    clock.advance(1);
    expect((await rebuilt().advance(HOST)).state).toBe('ready-to-deploy');

    // A crash after the deployment, while withdrawing the old record: retiring-old, resumed by the next advance.
    crashPublish = 1;
    await expect(m.dns.dane.completeKeyChange(HOST)).rejects.toThrow(/simulated crash/);
    expect(await m.dns.dane.status(HOST)).toMatchObject({ state: 'retiring-old', current_spki: B, next_spki: null });
    // The plan already holds only the new key's record.
    expect((await m.dns.dane.records(HOST)).map((r) => r.data)).toEqual([B]);
    s = await rebuilt().advance(HOST);
    expect(s).toMatchObject({ state: 'idle', current_spki: B });
    expect(await served(primary)).toEqual([B]);
  });

  it('the timer advances every key change in progress', async () => {
    await m.dns.dane.setCurrent('mx2.example.test', C);
    await m.dns.dane.prepareKeyChange(HOST, B);
    await serve(secondary, [A, B]);
    const r = await m.dns.dane.advanceAll();
    expect(r.errors).toEqual([]);
    expect(r.states.map((x) => [x.mail_host, x.state])).toEqual([[HOST, 'waiting-ttl']]);
  });
});
