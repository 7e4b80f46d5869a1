import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeNetnsPair, netnsUnavailable } from '../../../test/helpers/netns.js';
import type { NetnsPair } from '../../../test/helpers/netns.js';

const skip = netnsUnavailable() !== null;
type Obj = Record<string, Record<string, unknown>>;

// The built CLI applies the firewall inside a network namespace the test
// made; connections come over a veth pair from a second namespace. The
// namespace also holds another table, which must never change.
describe.skipIf(skip)('mailsvc firewall show|set in a network namespace: real connections, other tables untouched', () => {
  let ns: NetnsPair;
  let dataDir: string;
  let env: Record<string, string>;
  const cli = (...args: string[]) => ns.cli(ns.server, args, env);
  const ruleset = async (): Promise<Obj[]> => (JSON.parse(await ns.exec(ns.server, 'nft', ['-j', 'list', 'ruleset'])) as { nftables: Obj[] }).nftables.filter((o) => !o.metainfo);
  const otherTable = async () => (await ruleset()).filter((o) => Object.values(o)[0]?.table === 'other' || (o.table && o.table.name === 'other'));
  const mailsvcTable = async () => (await ruleset()).filter((o) => o.table?.name === 'mailsvc');
  let otherBefore: Obj[];

  beforeAll(async () => {
    ns = await makeNetnsPair();
    await ns.exec(ns.server, 'nft', ['add table ip other; add chain ip other keep { type filter hook input priority 10; policy accept; }; add rule ip other keep tcp dport 9 counter accept']);
    otherBefore = await otherTable();
    expect(otherBefore.length).toBe(3);
    await ns.listen([2525, 2626]);
    dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-fw-'));
    env = { MAILSVC_DATA_DIR: dataDir, MAILSVC_ADMIN_PASSWORD: 'x-unused-password', MAILSVC_HELPER: 'direct' };
    expect((await cli('db', 'migrate')).code).toBe(0);
  }, 60_000);
  afterAll(async () => {
    await ns?.destroy();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts off: show says disabled, both ports open, no mailsvc table', async () => {
    const show = await cli('firewall', 'show', '--json');
    expect(show.code, show.stderr).toBe(0);
    expect(JSON.parse(show.stdout)).toEqual({ 'firewall-enabled': 'no', 'firewall-rules-json': [] });
    expect(await ns.connects(2525)).toBe(true);
    expect(await ns.connects(2626)).toBe(true);
    expect(await mailsvcTable()).toEqual([]);
  });

  it('rules and enabled: the listed port opens, the other is dropped, the other table is unchanged', async () => {
    const rules = JSON.stringify([{ ports: '2525 8000-8100', protocol: 'tcp', source: '', enabled: 'yes' }, { ports: '2626', protocol: 'tcp', source: '', enabled: 'no' }]);
    expect((await cli('firewall', 'set', 'firewall-rules-json', rules)).code).toBe(0);
    const on = await cli('firewall', 'set', 'firewall-enabled', 'yes', '--json');
    expect(on.code, on.stderr).toBe(0);
    expect(JSON.parse(on.stdout)).toMatchObject({ 'firewall-enabled': 'yes', 'firewall-rules-json': [{ ports: '2525 8000-8100' }, { enabled: 'no' }] });
    expect(await ns.connects(2525)).toBe(true);
    expect(await ns.connects(2626)).toBe(false);
    expect(await otherTable()).toEqual(otherBefore);
    expect((await mailsvcTable()).length).toBe(1);
  });

  it('a source rule opens a port to that network only', async () => {
    const rules = JSON.stringify([{ ports: '2525', protocol: 'tcp', source: '', enabled: 'yes' }, { ports: '2626', protocol: 'tcp', source: `${ns.clientAddr}`, enabled: 'yes' }]);
    expect((await cli('firewall', 'set', 'firewall-rules-json', rules)).code).toBe(0);
    expect(await ns.connects(2626)).toBe(true);
    const other = JSON.stringify([{ ports: '2525', protocol: 'tcp', source: '', enabled: 'yes' }, { ports: '2626', protocol: 'tcp', source: '198.51.100.0/24', enabled: 'yes' }]);
    expect((await cli('firewall', 'set', 'firewall-rules-json', other)).code).toBe(0);
    expect(await ns.connects(2626)).toBe(false);
    expect(await ns.connects(2525)).toBe(true);
  });

  it('bad input: exit 2 with one line naming the field, and neither the table nor the settings change', async () => {
    const before = await mailsvcTable();
    const rulesBefore = (await ruleset()).filter((o) => o.rule?.table === 'mailsvc');
    for (const [args, msg] of [
      [['firewall-rules-json', '[{"ports":"99999","protocol":"tcp","source":"","enabled":"yes"}]'], /^mailsvc: firewall-rules-json\[0\]\.ports: /],
      [['firewall-rules-json', '[{"ports":"22","protocol":"sctp","source":"","enabled":"yes"}]'], /^mailsvc: firewall-rules-json\[0\]\.protocol: /],
      [['firewall-rules-json', 'not json'], /^mailsvc: firewall-rules-json: the value is not JSON/],
      [['firewall-enabled', 'maybe'], /^mailsvc: firewall-enabled: must be yes or no/],
      [['firewall-colour', 'red'], /^mailsvc: unknown firewall key/],
    ] as const) {
      const r = await cli('firewall', 'set', ...args);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(msg);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(await mailsvcTable()).toEqual(before);
    expect((await ruleset()).filter((o) => o.rule?.table === 'mailsvc')).toEqual(rulesBefore);
    expect(JSON.parse((await cli('firewall', 'show', '--json')).stdout)['firewall-rules-json'][1].source).toBe('198.51.100.0/24');
  });

  it('firewall-enabled no removes mailsvc\'s table and nothing else', async () => {
    const off = await cli('firewall', 'set', 'firewall-enabled', 'no');
    expect(off.code, off.stderr).toBe(0);
    expect(await mailsvcTable()).toEqual([]);
    expect(await otherTable()).toEqual(otherBefore);
    expect(await ns.connects(2626)).toBe(true);
    // Removing it again (no table) is fine too.
    expect((await cli('firewall', 'set', 'firewall-enabled', 'no')).code).toBe(0);
  });
});
