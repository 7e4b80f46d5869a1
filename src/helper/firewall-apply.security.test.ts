import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { request, startHelperProcess } from '../../test/helpers/helper-process.js';
import type { HelperProcess } from '../../test/helpers/helper-process.js';
import { findProgram } from '../../test/helpers/mail-daemons.js';
import { skipNotice } from '../../test/helpers/services.js';
import { NOBODY, askAsNobody, runAsNobody, unprivilegedUnavailable } from '../../test/helpers/unprivileged-client.js';

const why = unprivilegedUnavailable() ?? (['unshare', 'nsenter', 'nft'].find((p) => findProgram(p) === null) ? 'unshare, nsenter or nft (nftables) is not installed' : null);
if (why) skipNotice('an unprivileged client beside a root helper in a network namespace of its own', why);

type Obj = Record<string, Record<string, unknown>>;
const MARKER = 'MAILSVC-ROOT-ONLY-MARKER-7f3a';

/**
 * The second security review's firewall attacks, as an unprivileged member of
 * the socket's group against the real helper (root) over its socket. The
 * helper runs in a network namespace of its own (`unshare -n`), so nft never
 * touches this machine's ruleset; that namespace also holds another table,
 * which must never change. The rule: the unprivileged side sends data, never
 * file content or a path, and a reply never carries a daemon's output.
 */
describe.skipIf(why !== null)('firewall: no nftables file from the caller, only data; no daemon output in a reply', { timeout: 120_000 }, () => {
  let root: string;
  let attacker: string;
  let helper: HelperProcess;
  let otherBefore: Obj[];
  const nsNft = (...args: string[]): string => execFileSync('nsenter', ['-t', String(helper.pid), '-n', 'nft', ...args], { encoding: 'utf8', timeout: 30_000 });
  const ruleset = (): Obj[] => (JSON.parse(nsNft('-j', 'list', 'ruleset')) as { nftables: Obj[] }).nftables.filter((o) => !o.metainfo);
  const ofTable = (objs: Obj[], family: string, name: string): Obj[] =>
    objs.filter((o) => {
      const v = Object.values(o)[0] ?? {};
      return (o.table ? v.name === name : v.table === name) && v.family === family;
    });
  const ask = async (action: string, args: string[]): Promise<Record<string, unknown>> => {
    const r = await askAsNobody(helper.socket, [request(1, action, args)]).done;
    expect(r.timedOut).toBe(false);
    return r.answers[0] ?? { closed: r.closed };
  };
  /** A file the unprivileged user owns, in its own directory. */
  const attackFile = (name: string, text: string): string => {
    const p = join(attacker, name);
    writeFileSync(p, text);
    chownSync(p, NOBODY, NOBODY);
    return p;
  };

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'mailsvc-fw-priv-'));
    chmodSync(root, 0o755);
    attacker = join(root, 'attacker');
    mkdirSync(attacker, { mode: 0o755 });
    chownSync(attacker, NOBODY, NOBODY);
    const secret = join(root, 'secret');
    mkdirSync(secret, { mode: 0o700 });
    writeFileSync(join(secret, 'marker'), `${MARKER} first line\n${MARKER} second line\n`, { mode: 0o600 });
    helper = await startHelperProcess({ fakes: false, wrap: () => ['unshare', '-n', '--'], env: { MAILSVC_HELPER_SOCKET_GROUP: String(NOBODY) } });
    chmodSync(helper.dir, 0o755);
    nsNft('add table inet other; add chain inet other keep { type filter hook input priority 10; policy accept; }; add rule inet other keep tcp dport 9 counter accept');
    otherBefore = ofTable(ruleset(), 'inet', 'other');
    expect(otherBefore).toHaveLength(3);
  });
  afterAll(async () => {
    await helper?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("attack 1: `include` of a root-only file inside mailsvc's table (old nft-check <path>) is refused and quotes none of it", async () => {
    const marker = join(root, 'secret/marker');
    expect(runAsNobody('cat', [marker]).status).not.toBe(0);
    const shadow = existsSync('/etc/shadow') ? readFileSync('/etc/shadow', 'utf8').split('\n').filter((l) => l.length > 8) : [];
    for (const [i, target] of [marker, '/etc/shadow'].entries()) {
      const file = attackFile(`include-${i}.nft`, `table inet mailsvc {\n  include "${target}"\n}\n`);
      for (const action of ['nft-check', 'nft-apply']) {
        const answer = await ask(action, [file]);
        const text = JSON.stringify(answer);
        expect(text).not.toContain(MARKER);
        for (const line of shadow) expect(text).not.toContain(line);
        expect(answer.ok, text).toBe(false);
        expect(['unknown-action', 'invalid-argument']).toContain(answer.error);
      }
    }
    expect(ofTable(ruleset(), 'inet', 'mailsvc')).toEqual([]);
  });

  it('attack 2: `flush ruleset` and an accept-all table smuggled past the one-table check with comment "#" / "}" change nothing', async () => {
    const file = attackFile(
      'smuggle.nft',
      [
        'table inet mailsvc {',
        '  comment "#"; }',
        'flush ruleset',
        'table ip filter { chain input { type filter hook input priority 0; policy accept; }; }',
        'table inet mailsvc {',
        '  comment "}"',
        '}',
        '',
      ].join('\n'),
    );
    for (const action of ['nft-check', 'nft-apply']) {
      const answer = await ask(action, [file]);
      expect(answer.ok, JSON.stringify(answer)).toBe(false);
    }
    const after = ruleset();
    expect(ofTable(after, 'inet', 'other')).toEqual(otherBefore);
    expect(ofTable(after, 'ip', 'filter')).toEqual([]);
  });

  it('firewall-apply refuses hostile values in every field as invalid-argument, before nft runs; nothing changes', async () => {
    const before = ruleset();
    const rule = { ports: '22', protocol: 'tcp', source: '', enabled: 'yes' };
    const state = (over: Record<string, unknown> = {}, ruleOver: Record<string, unknown> = {}) => JSON.stringify({ 'firewall-enabled': 'yes', 'firewall-rules-json': [{ ...rule, ...ruleOver }], ...over });
    const hostile = [
      ...['22 } include "/etc/shadow"', '22\nflush ruleset', '22; flush ruleset', '22 # x', '"22"', '22 {', '1 '.repeat(10_000)].map((ports) => state({}, { ports })),
      ...['tcp; flush ruleset', 'tcp"', 'tcp\n', 'icmp', '#'].map((protocol) => state({}, { protocol })),
      ...['10.0.0.0/8 } table ip filter {', 'include "/etc/shadow"', '::/0 # x', '10.0.0.1/8', '10.0.0.0/8;'].map((source) => state({}, { source })),
      ...['yes;', '#', 'yes\n}', 'true'].map((enabled) => state({}, { enabled })),
      ...['yes\n', '}', 'yes # x'].map((e) => state({ 'firewall-enabled': e })),
      state({ ruleset: 'flush ruleset' }),
      state({}, { comment: '#' }),
      JSON.stringify({ 'firewall-enabled': 'yes', 'firewall-rules-json': Array.from({ length: 257 }, () => rule) }),
      JSON.stringify({ 'firewall-enabled': 'yes' }),
      'flush ruleset',
      'table inet mailsvc { include "/etc/shadow" }',
      '{"firewall-enabled": "yes"',
      '[]',
    ];
    for (const raw of hostile) {
      const answer = await ask('firewall-apply', [raw]);
      expect(answer, raw.slice(0, 80)).toMatchObject({ ok: false, error: 'invalid-argument' });
      expect(JSON.stringify(answer)).not.toMatch(/root:|MARKER/);
    }
    // Larger than the action takes: refused by the protocol, before the action is even looked at.
    const huge = await askAsNobody(helper.socket, [request(2, 'firewall-apply', [state({}, { ports: '2'.repeat(62 * 1024) })])]).done;
    expect(huge.answers[0]).toMatchObject({ ok: false });
    expect(['malformed', 'line-too-long']).toContain(huge.answers[0]?.error);
    expect(ruleset()).toEqual(before);
    await vi.waitFor(() => expect(helper.logs().filter((l) => (l.helper as { action?: string } | undefined)?.action === 'firewall-apply')).toHaveLength(hostile.length), { timeout: 30_000 });
    expect(helper.logs().filter((l) => (l.helper as { action?: string; error?: string } | undefined)?.action === 'firewall-apply').map((l) => (l.helper as { error?: string }).error)).toEqual(hostile.map(() => 'invalid-argument'));
  });

  it('firewall-apply with a good state: the helper renders mailsvc\'s table; only that table changes; disabled removes it', async () => {
    const withoutMailsvc = (objs: Obj[]) => objs.filter((o) => ofTable([o], 'inet', 'mailsvc').length === 0);
    const before = ruleset();
    const good = { 'firewall-enabled': 'yes', 'firewall-rules-json': [{ ports: 'ssh 2525', protocol: 'tcp', source: '', enabled: 'yes' }, { ports: '53', protocol: 'udp', source: '2001:db8::/64', enabled: 'yes' }, { ports: 'web', protocol: 'tcp', source: '', enabled: 'no' }] };
    expect(await ask('firewall-apply', [JSON.stringify(good)])).toMatchObject({ ok: true, code: 0 });
    const on = ruleset();
    const mine = ofTable(on, 'inet', 'mailsvc');
    expect(mine.filter((o) => o.chain).map((o) => [o.chain?.name, o.chain?.policy])).toEqual([['input', 'drop']]);
    expect(mine.filter((o) => o.rule)).toHaveLength(6);
    expect(JSON.stringify(mine)).toContain('2001:db8::');
    expect(withoutMailsvc(on)).toEqual(withoutMailsvc(before));
    // Applied again with other rules: replaced, not added to.
    expect(await ask('firewall-apply', [JSON.stringify({ ...good, 'firewall-rules-json': [good['firewall-rules-json'][0]] })])).toMatchObject({ ok: true });
    expect(ofTable(ruleset(), 'inet', 'mailsvc').filter((o) => o.rule)).toHaveLength(5);
    expect(await ask('firewall-apply', [JSON.stringify({ ...good, 'firewall-enabled': 'no' })])).toMatchObject({ ok: true });
    const off = ruleset();
    expect(ofTable(off, 'inet', 'mailsvc')).toEqual([]);
    expect(ofTable(off, 'inet', 'other')).toEqual(otherBefore);
  });

  describe('when nft refuses', () => {
    let failing: HelperProcess;
    const SAID = 'NFT-STDERR-QUOTING-A-FILE root:$6$secret';
    beforeAll(async () => {
      const bin = join(root, 'bin');
      mkdirSync(bin, { mode: 0o755 });
      // A stand-in nft that fails the way nft does on a file it cannot parse: quoting the file on stderr.
      writeFileSync(join(bin, 'nft'), `#!/bin/sh\necho 'In file included from /etc/shadow:1:1-30:' >&2\necho '${SAID}' >&2\nexit 1\n`, { mode: 0o755 });
      failing = await startHelperProcess({ fakes: false, env: { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`, MAILSVC_HELPER_SOCKET_GROUP: String(NOBODY) } });
      chmodSync(failing.dir, 0o755);
    });
    afterAll(async () => {
      await failing?.stop();
    });

    it('the reply is a fixed sentence without nft\'s output; the output goes to the helper\'s log', async () => {
      const r = await askAsNobody(failing.socket, [request(1, 'firewall-apply', [JSON.stringify({ 'firewall-enabled': 'no', 'firewall-rules-json': [] })])]).done;
      const answer = r.answers[0] ?? {};
      expect(answer).toEqual({ id: 1, ok: false, error: 'failed', detail: 'nft refused the rendered ruleset (exit 1); the running ruleset is unchanged', exec: { kind: 'exit', code: 1 } });
      expect(JSON.stringify(answer)).not.toContain('NFT-STDERR');
      await vi.waitFor(() => expect(JSON.stringify(failing.logs().filter((l) => l.level === 40))).toContain('NFT-STDERR-QUOTING-A-FILE'), { timeout: 30_000 });
    });
  });
});
