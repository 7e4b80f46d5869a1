import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { skipNotice } from '../../../test/helpers/services.js';
import { knotUnavailable, startKnot } from '../../../test/helpers/knot.js';
import type { Knot } from '../../../test/helpers/knot.js';
import { FakeClock } from '../../../test/helpers/app.js';
import { openDnsModules } from '../../../test/helpers/dns-modules.js';
import type { DnsTestModules } from '../../../test/helpers/dns-modules.js';
import { splitTxt } from './txt.js';
import type { SigningKey } from './dkim-signing.js';
import { txtContent } from './cloudflare-sync.service.js';

/**
 * DKIM rotation against a real authoritative server (knot, changed with
 * dynamic updates) and a clock the test moves: the order of the steps, the
 * rule that no selector signs before every authoritative server answers it
 * and its TTL passed, and resuming after a crash at a step.
 */
const why = knotUnavailable();
if (why) skipNotice('knot', why);

const D = 'example.test';
const TTL = 300;
const DAY = 86_400_000;

describe.skipIf(why !== null)('DKIM rotation', () => {
  let knot: Knot;
  let m: DnsTestModules;
  let clock: FakeClock;
  /** Each render of Rspamd's keys: the selectors signing, and what knot answered for each at that moment. */
  let signings: { selectors: string[]; visible: boolean[]; at: number }[];
  let failSigning = 0;
  /** Key files deleted (the helper's dkim-key-remove), in order. */
  let removed: string[];

  const publish = async (name: string, value: string) => knot.update(D, [`update delete ${name}. TXT`, `update add ${name}. ${TTL} TXT ${splitTxt(value).map((s) => `"${s}"`).join(' ')}`]);
  const publishAll = async () => {
    for (const k of await m.dns.dkim.keys(D)) await publish(k.record_name, k.record_value);
  };

  beforeEach(async () => {
    knot = await startKnot({ [D]: [] });
    clock = new FakeClock(Date.UTC(2026, 10, 1));
    signings = [];
    removed = [];
    failSigning = 0;
    m = await openDnsModules(
      { MAILSVC_DNS_RESOLVER: knot.address, MAILSVC_DNS_AUTHORITATIVE: knot.address },
      {
        removeKeyFiles: async (domain, selectors) => void removed.push(...selectors.map((x) => `${domain}/${x}`)),
        graceDays: () => 7,
        applySigning: async (keys: readonly SigningKey[]) => {
          if (failSigning > 0) {
            failSigning -= 1;
            throw new Error('rspamd reload failed (simulated crash)');
          }
          const all = await m.dns.dkim.keys(D);
          const visible = await Promise.all(
            keys.map(async (k) => {
              const key = all.find((x) => x.selector === k.selector);
              return txtContent((await knot.dig(`${k.selector}._domainkey.${D}`, 'TXT')).join(' ')) === key?.record_value;
            }),
          );
          signings.push({ selectors: keys.map((k) => k.selector), visible, at: clock.now() });
          return { status: 'changed', detail: 'test', reloaded: true };
        },
      },
      { clock },
    );
    await m.domains.service.createWithDkim(D);
    await publishAll();
  }, 60_000);

  afterEach(async () => {
    await m?.close();
    await knot?.stop();
  });

  it('goes generate → publish → visible → TTL → switch → grace → remove, never signing with a selector not yet visible', async () => {
    const [first] = await m.dns.dkim.keys(D);
    clock.advance(40 * DAY);
    let s = await m.dns.rotation.rotate(D);
    expect(s).toMatchObject({ step: 'await-visible', old_selectors: [first!.selector] });
    expect(s.waiting).toMatch(/does not have it yet/);
    const fresh = (await m.dns.dkim.keys(D)).find((k) => k.selector === s.new_selector)!;
    expect(fresh.state).toBe('pending');

    // Published with another value: still not visible.
    await publish(fresh.record_name, fresh.record_value.replace(/p=.{8}/, 'p=AAAAAAAA'));
    s = await m.dns.rotation.rotate(D);
    expect(s.waiting).toMatch(/answers another value/);

    await publish(fresh.record_name, fresh.record_value);
    s = await m.dns.rotation.rotate(D);
    expect(s.step).toBe('await-ttl');
    clock.advance(TTL * 1000 - 1);
    expect((await m.dns.rotation.rotate(D)).step).toBe('await-ttl');
    expect(signings.flatMap((x) => x.selectors)).not.toContain(fresh.selector);

    clock.advance(1);
    s = await m.dns.rotation.rotate(D);
    expect(s.step).toBe('grace');
    expect(signings.at(-1)?.selectors).toEqual([fresh.selector]);
    const states = Object.fromEntries((await m.dns.dkim.keys(D)).map((k) => [k.selector, k.state]));
    expect(states).toEqual({ [first!.selector]: 'retiring', [fresh.selector]: 'active' });

    clock.advance(7 * DAY - 1);
    expect((await m.dns.rotation.rotate(D)).step).toBe('grace');
    expect(removed).toEqual([]);
    clock.advance(1);
    expect((await m.dns.rotation.rotate(D)).step).toBe('done');
    // The old key's file goes only after the grace period.
    expect(removed).toEqual([`${D}/${first!.selector}`]);
    expect((await m.dns.dkim.keys(D)).map((k) => k.selector)).toEqual([fresh.selector]);
    expect(await m.dns.rotation.current(D)).toBeNull();
    // The rule, over every render of the rotation (the first is the new domain's first key, which signs
    // at once by design: nothing was published before it): each signing selector was answered by knot then.
    expect(signings.length).toBeGreaterThan(1);
    for (const x of signings.slice(1)) expect(x.visible.every(Boolean), JSON.stringify(x)).toBe(true);
  });

  it('resumes after a crash at the switch without making another key, and the plan keeps the old record during grace', async () => {
    const s0 = await m.dns.rotation.rotate(D);
    await publishAll();
    clock.advance(TTL * 1000);
    expect((await m.dns.rotation.rotate(D)).step).toBe('await-ttl');
    clock.advance(TTL * 1000);
    failSigning = 1;
    await expect(m.dns.rotation.rotate(D)).rejects.toThrow(/simulated crash/);
    expect(await m.dns.rotation.current(D)).toMatchObject({ step: 'switch', new_selector: s0.new_selector });
    const count = (await m.dns.dkim.keys(D)).length;
    const s = await m.dns.rotation.rotate(D);
    expect(s.step).toBe('grace');
    expect((await m.dns.dkim.keys(D)).length).toBe(count);
    expect(signings.at(-1)?.selectors).toEqual([s0.new_selector]);
    const plan = await m.dns.plan.plan(D, 'mail.example.test');
    expect(plan.records.filter((r) => r.name.endsWith('._domainkey.example.test')).map((r) => r.name.split('.')[0]).sort()).toEqual([s0.old_selectors[0], s0.new_selector].sort());
  });

  it('resumes a rotation interrupted right after it was started: the stored selector is used, keys made once', async () => {
    // A crash between storing the rotation and making its keys: the row exists, the keys do not.
    const sel = '202612b';
    await m.infra.db.insertInto('dkim_rotations').values({ domain: D, step: 'generate', new_selector: sel, old_selector: (await m.dns.dkim.keys(D))[0]!.selector, wait_until: null, started_at: clock.now(), updated_at: clock.now(), last_error: null }).execute();
    const s = await m.dns.rotation.rotate(D);
    expect(s).toMatchObject({ step: 'await-visible', new_selector: sel });
    expect((await m.dns.dkim.keys(D)).filter((k) => k.selector === sel)).toHaveLength(1);
    await m.dns.rotation.rotate(D);
    expect((await m.dns.dkim.keys(D)).filter((k) => k.selector === sel)).toHaveLength(1);
  });
});

/**
 * The wait after visibility is the TTL the authoritative servers publish for
 * the new record (the largest across them), read from their answers: two knot
 * servers publishing 45 s and 120 s, and a clock the test moves.
 */
describe.skipIf(why !== null)('DKIM rotation waits the TTL the authoritative servers publish', () => {
  let a: Knot;
  let b: Knot;
  let m: DnsTestModules;
  let clock: FakeClock;
  let signed: string[][];

  const publishOn = async (k: Knot, name: string, value: string, ttl: number) =>
    k.update(D, [`update delete ${name}. TXT`, `update add ${name}. ${ttl} TXT ${splitTxt(value).map((s) => `"${s}"`).join(' ')}`]);

  beforeEach(async () => {
    a = await startKnot({ [D]: [] });
    b = await startKnot({ [D]: [] });
    clock = new FakeClock(Date.UTC(2026, 10, 1));
    signed = [];
    m = await openDnsModules(
      { MAILSVC_DNS_RESOLVER: a.address, MAILSVC_DNS_AUTHORITATIVE: `${a.address},${b.address}` },
      { applySigning: async (keys) => (signed.push(keys.map((k) => k.selector)), { status: 'changed', detail: 'test', reloaded: true }), removeKeyFiles: async () => undefined },
      { clock },
    );
    await m.domains.service.createWithDkim(D);
    for (const k of await m.dns.dkim.keys(D)) for (const s of [a, b]) await publishOn(s, k.record_name, k.record_value, 3600);
  }, 60_000);

  afterEach(async () => {
    await m?.close();
    await a?.stop();
    await b?.stop();
  });

  it('switches after the largest published TTL (120 s), not before, and not after a fixed 3600 s; the deadline is stored', async () => {
    let s = await m.dns.rotation.rotate(D);
    const fresh = (await m.dns.dkim.keys(D)).find((k) => k.selector === s.new_selector)!;
    await publishOn(a, fresh.record_name, fresh.record_value, 45);
    s = await m.dns.rotation.rotate(D);
    expect(s.step).toBe('await-visible');
    expect(s.waiting).toContain(`127.0.0.1:${b.port} does not have it yet`);
    await publishOn(b, fresh.record_name, fresh.record_value, 120);
    const visibleAt = clock.now();
    s = await m.dns.rotation.rotate(D);
    expect(s.step).toBe('await-ttl');
    expect(s.wait_until).toBe(new Date(visibleAt + 120_000).toISOString());
    // Stored: another instance (a restart) reads the same deadline.
    expect((await m.dns.rotation.current(D))?.wait_until).toBe(new Date(visibleAt + 120_000).toISOString());
    clock.advance(119_999);
    expect((await m.dns.rotation.rotate(D)).step).toBe('await-ttl');
    expect(signed.flat()).not.toContain(fresh.selector);
    clock.advance(1);
    expect((await m.dns.rotation.rotate(D)).step).toBe('grace');
    expect(signed.at(-1)).toEqual([fresh.selector]);
  });
});
