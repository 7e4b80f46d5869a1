import { execFileSync, spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCliAsNobody } from '../../../test/helpers/unprivileged-client.js';
import { exchange, request, startHelperProcess } from '../../../test/helpers/helper-process.js';
import type { HelperProcess } from '../../../test/helpers/helper-process.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { knotUnavailable, startKnot } from '../../../test/helpers/knot.js';
import type { Knot } from '../../../test/helpers/knot.js';
import { prepareRspamd, rspamdUnavailable, startRspamd } from '../../../test/helpers/rspamd.js';
import type { Rspamd } from '../../../test/helpers/rspamd.js';
import { startMilterPostfix } from '../../../test/helpers/postfix-milter.js';
import type { MilterPostfix } from '../../../test/helpers/postfix-milter.js';
import { dkimVerify, dkimpyUnavailable } from '../../../test/helpers/dkim-verify.js';
import { splitTxt } from './txt.js';

const NOBODY = 65534;
const has = (cmd: string, args: string[]): boolean => spawnSync(cmd, args, { stdio: 'ignore', timeout: 30_000 }).status === 0;
const rspamdGid = ((): number => {
  try {
    return Number(execFileSync('getent', ['group', '_rspamd'], { encoding: 'utf8' }).split(':')[2]);
  } catch {
    return -1;
  }
})();
const why =
  (process.getuid?.() === 0 && has('setpriv', ['--version']) ? null : 'the test runs the CLI as nobody beside a root helper (root, setpriv)') ??
  knotUnavailable() ??
  rspamdUnavailable() ??
  dkimpyUnavailable() ??
  (rspamdGid >= 0 ? null : 'no group _rspamd (Debian package rspamd)');
if (why) skipNotice('root, setpriv, knot, rspamd, postfix, python3-dkim', why);

const der64 = (key: ReturnType<typeof generateKeyPairSync>['privateKey']): string => key.export({ type: 'pkcs8', format: 'der' }).toString('base64');

/**
 * The service runs as an unprivileged user: it cannot write Rspamd's
 * directory. `add domain --generate-dkim` run as `nobody` hands the key to the
 * root helper over its real socket; the helper writes the key file and the
 * signing configuration itself, root-owned. Rspamd then signs (Postfix +
 * Rspamd milter), dkimpy verifies against knot; and the helper refuses
 * whatever is not a selector, a domain name or a DKIM key, writing nothing.
 */
describe.skipIf(why !== null)('DKIM keys from an unprivileged service, through the root helper', { timeout: 300_000 }, () => {
  let dir: string;
  let knot: Knot;
  let helper: HelperProcess;
  let rspamd: Rspamd | undefined;
  let postfix: MilterPostfix | undefined;
  let prepared: Awaited<ReturnType<typeof prepareRspamd>>;
  let env: Record<string, string>;
  let keys: { selector: string; algorithm: string; record_name: string; record_value: string }[] = [];
  const keyDir = () => join(prepared.etcDir, 'dkim');
  const conf = () => join(prepared.localDir, 'dkim_signing.conf');
  // The bundle as nobody, wherever this checkout is (a clone under /root is not reachable by nobody).
  const asNobody = (args: string[]) => runCliAsNobody(args, { env, timeoutMs: 120_000 });
  const nobodyShell = (script: string) => spawnSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', 'sh', '-c', script], { encoding: 'utf8' });
  const snapshot = () => ({ files: readdirSync(keyDir()).sort(), conf: readFileSync(conf(), 'utf8') });
  const ask = async (action: string, args: string[]) => (await exchange(helper.socket, request(1, action, args), 1, 60_000)).answers[0] as { ok: boolean; error?: string; detail?: string; stdout?: string };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-dkim-priv-'));
    chmodSync(dir, 0o755);
    knot = await startKnot({ 'example.test': ['@ MX 10 mail.example.test.', 'mail A 127.0.0.1'] });
    prepared = await prepareRspamd(dir, knot.address);
    // systemctl as the helper sees it: Rspamd is not running yet (it starts below, reading the files then).
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'systemctl'), `#!/bin/sh\necho "systemctl $*" >> '${join(dir, 'systemctl.log')}'\n[ "$1" = is-active ] && exit 3\nexit 1\n`, { mode: 0o755 });
    const daemons = { MAILSVC_RSPAMD_LOCAL_DIR: prepared.localDir, MAILSVC_RSPAMD_GROUP: '_rspamd', MAILSVC_DKIM_ED25519: 'yes' };
    helper = await startHelperProcess({ fakes: false, env: { ...daemons, PATH: `${bin}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`, MAILSVC_HELPER_SOCKET_GROUP: String(NOBODY) } });
    chmodSync(helper.dir, 0o755);
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o750 });
    chownSync(data, NOBODY, NOBODY);
    env = {
      PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: data,
      MAILSVC_DATA_DIR: data,
      MAILSVC_SECRET_KEY: randomBytes(32).toString('base64'),
      MAILSVC_HELPER: `unix:${helper.socket}`,
      MAILSVC_DNS_RESOLVER: knot.address,
      MAILSVC_DNS_AUTHORITATIVE: knot.address,
      ...daemons,
    };
    const migrate = asNobody(['db', 'migrate']);
    expect(migrate.status, migrate.stderr).toBe(0);
  }, 300_000);

  afterAll(async () => {
    await postfix?.stop();
    await rspamd?.stop();
    await helper?.stop();
    await knot?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('nobody cannot write Rspamd\'s directory itself', () => {
    const r = nobodyShell(`echo x > '${join(prepared.localDir, 'dkim_signing.conf')}'`);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/Permission denied/);
  });

  it('add domain --generate-dkim as nobody: the helper writes the key files and the signing config, root-owned', async () => {
    const r = asNobody(['add', 'domain', 'example.test', '--generate-dkim', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { dkim: { keys: Omit<(typeof keys)[number], 'algorithm'>[] } };
    keys = out.dkim.keys.map((k) => ({ ...k, algorithm: /k=(\w+);/.exec(k.record_value)?.[1] ?? '' }));
    expect(keys.map((k) => k.algorithm).sort()).toEqual(['ed25519', 'rsa']);
    const text = readFileSync(conf(), 'utf8');
    expect(statSync(conf()).uid).toBe(0);
    const d = statSync(keyDir());
    expect([d.mode & 0o7777, d.uid, d.gid]).toEqual([0o750, 0, rspamdGid]);
    for (const k of keys) {
      const path = join(keyDir(), `example.test.${k.selector}.key`);
      expect(text).toContain(`{ selector = "${k.selector}"; path = "${path}"; }`);
      const st = statSync(path);
      expect([st.mode & 0o7777, st.uid, st.gid]).toEqual([0o640, 0, rspamdGid]);
      // nobody can neither replace nor read the key.
      expect(nobodyShell(`echo x > '${path}'`).status).not.toBe(0);
      expect(nobodyShell(`cat '${path}'`).status).not.toBe(0);
    }
    expect(nobodyShell(`echo x > '${join(keyDir(), 'example.test.evil.key')}'`).status).not.toBe(0);
    // The key travelled as a secret argument: the helper's journal shows it redacted.
    await vi.waitFor(() => expect(helper.logs().some((l) => (l.helper as { action?: string } | undefined)?.action === 'dkim-signing-apply')).toBe(true), { timeout: 30_000 });
    const installs = helper.logs().map((l) => l.helper as { action?: string; args?: string[] } | undefined).filter((h) => h?.action === 'dkim-key-install');
    expect(installs).toHaveLength(2);
    for (const h of installs) expect(h?.args?.[3]).toBe('[redacted]');
  });

  it('Rspamd signs with those files: a message through Postfix + Rspamd verifies with dkimpy against knot', async () => {
    for (const k of keys) await knot.update('example.test', [`update add ${k.record_name}. 60 TXT ${splitTxt(k.record_value).map((s) => `"${s}"`).join(' ')}`]);
    rspamd = await startRspamd(dir, prepared);
    postfix = await startMilterPostfix(`127.0.0.1:${prepared.ports.milter}`);
    const message = ['From: Alice <alice@example.test>', 'To: bob@elsewhere.invalid', 'Subject: signed through the helper', `Date: ${new Date().toUTCString()}`, 'Message-ID: <h1@example.test>', '', 'Hello.', ''].join('\r\n');
    const signed = await postfix.send('alice@example.test', 'bob@elsewhere.invalid', message);
    const results = await dkimVerify(signed, { host: '127.0.0.1', port: knot.port });
    expect(results.sort()).toEqual(keys.map((k) => `${k.selector} ${k.algorithm === 'rsa' ? 'rsa-sha256' : 'ed25519-sha256'} pass`).sort());
  }, 300_000);

  it('refuses a bad selector, a path-like domain, a 1024-bit RSA key, a key of another type and a non-key blob, writing nothing', async () => {
    const before = snapshot();
    const good = der64(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey);
    const refusals: [string, string[], RegExp][] = [
      ['dkim-key-install', ['example.test', '../../x', 'rsa', good], /selector must be one DNS label/],
      ['dkim-key-install', ['example.test', 'Sel 1', 'rsa', good], /selector must be one DNS label/],
      ['dkim-key-install', ['example.test', '-rf', 'rsa', good], /selector must be one DNS label/],
      ['dkim-key-install', ['../../etc', '202611', 'rsa', good], /Invalid domain name/],
      ['dkim-key-install', ['example.test/../../etc', '202611', 'rsa', good], /Invalid domain name/],
      ['dkim-key-install', ['EXAMPLE.test', '202611', 'rsa', good], /domain must be written as example\.test/],
      ['dkim-key-install', ['example.test', '202611', 'dsa', good], /alg must be one of rsa, ed25519/],
      ['dkim-key-install', ['example.test', '202611', 'rsa', der64(generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey)], /RSA key of 1024 bits/],
      ['dkim-key-install', ['example.test', '202611', 'rsa', der64(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey)], /key is ec: only RSA and Ed25519/],
      ['dkim-key-install', ['example.test', '202611', 'rsa', Buffer.from('-----BEGIN PRIVATE KEY----- not a key').toString('base64')], /not a PKCS#8 DER private key/],
      ['dkim-key-install', ['example.test', '202611', 'rsa', 'not base64!'], /base64 of a PKCS#8 DER/],
      ['dkim-signing-apply', [JSON.stringify([{ domain: 'example.test', selectors: [{ selector: keys[0]!.selector, path: '/etc/shadow' }] }])], /must be \{selector\}/],
      ['dkim-signing-apply', [JSON.stringify([{ domain: 'example.test/..', selectors: [{ selector: 'x' }] }])], /Invalid domain name/],
      ['dkim-key-remove', ['example.test', '../dkim_signing'], /selector must be one DNS label/],
    ];
    for (const [action, args, reason] of refusals) {
      const a = await ask(action, args);
      expect(a, `${action} ${args.slice(0, 2).join(' ')}`).toMatchObject({ ok: false, error: 'invalid-argument' });
      expect(a.detail).toMatch(reason);
      // A refused key is never quoted back.
      if (args[3]) expect(a.detail).not.toContain(args[3].slice(0, 40));
    }
    // Valid-looking but wrong: an Ed25519 key installed as RSA fails in the helper, nothing written.
    const ed = der64(generateKeyPairSync('ed25519').privateKey);
    expect(await ask('dkim-key-install', ['example.test', '209901', 'rsa', ed])).toMatchObject({ ok: false, error: 'failed', detail: expect.stringMatching(/key is ed25519, not rsa/) });
    // Another key under a selector that signs now is refused; so is removing its file or signing with a selector that has no key.
    const rsa = keys.find((k) => k.algorithm === 'rsa')!;
    expect(await ask('dkim-key-install', ['example.test', rsa.selector, 'rsa', good])).toMatchObject({ ok: false, detail: expect.stringMatching(/signs now/) });
    expect(await ask('dkim-key-remove', ['example.test', rsa.selector])).toMatchObject({ ok: false, detail: expect.stringMatching(/signing configuration/) });
    const missing = await ask('dkim-signing-apply', [JSON.stringify([{ domain: 'example.test', selectors: [{ selector: 'nokey' }] }])]);
    expect(JSON.parse(missing.stdout ?? '{}')).toMatchObject({ ok: false, detail: expect.stringMatching(/no key file for selector nokey/) });
    expect(snapshot()).toEqual(before);
    // A configuration rspamadm configtest refuses (here: another file of local.d broken) is not installed; the old one stays.
    const broken = join(prepared.localDir, 'options.inc');
    writeFileSync(broken, 'this is { not ucl\n');
    try {
      const refused = await ask('dkim-signing-apply', [JSON.stringify([{ domain: 'example.test', selectors: [{ selector: rsa.selector }] }])]);
      expect(JSON.parse(refused.stdout ?? '{}')).toMatchObject({ ok: false, detail: expect.stringMatching(/check of rspamd failed/) });
      // rspamadm quotes the broken file; that stays in the helper's log, out of the reply.
      expect(JSON.stringify(refused)).not.toContain('not ucl');
    } finally {
      rmSync(broken);
    }
    expect(snapshot()).toEqual(before);
  });

  it('an RSA-4096 key fits the protocol and installs; a retired key file is removed, leaving the signing ones', async () => {
    const big = der64(generateKeyPairSync('rsa', { modulusLength: 4096 }).privateKey);
    expect(big.length).toBeLessThanOrEqual(4096);
    const ok = await ask('dkim-key-install', ['example.test', '209912', 'rsa', big]);
    expect(ok, ok.detail).toMatchObject({ ok: true });
    expect(JSON.parse(ok.stdout ?? '{}')).toMatchObject({ status: 'created' });
    const path = join(keyDir(), 'example.test.209912.key');
    expect(readFileSync(path, 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    expect(JSON.parse((await ask('dkim-key-remove', ['example.test', '209912'])).stdout ?? '{}')).toMatchObject({ status: 'removed' });
    expect(readdirSync(keyDir()).sort()).toEqual(keys.map((k) => `example.test.${k.selector}.key`).sort());
  });

  it('a rotation run as nobody ends with Rspamd signing with the new keys and the old key files deleted, all through the helper', async () => {
    const old = keys.map((k) => k.selector).sort();
    expect(asNobody(['limits', 'set', 'dkim-rotation-grace-days', '0']).status).toBe(0);
    const rotate = () => {
      const r = asNobody(['dns', 'rotate-dkim', 'example.test', '--json']);
      expect(r.status, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as { step: string; new_selector: string };
    };
    const started = rotate();
    expect(started.step).toBe('await-visible');
    const listed = asNobody(['dns', 'keys', 'example.test', '--json']);
    const pending = (JSON.parse(listed.stdout) as { selector: string; algorithm: string; state: string; record_name: string; record_value: string }[]).filter((k) => k.state === 'pending');
    expect(pending.map((k) => k.selector).sort()).toEqual([started.new_selector, `${started.new_selector}e`].sort());
    // A pending key is not installed: Rspamd cannot sign with it before the switch.
    for (const k of pending) expect(readdirSync(keyDir())).not.toContain(`example.test.${k.selector}.key`);
    for (const k of pending) await knot.update('example.test', [`update add ${k.record_name}. 2 TXT ${splitTxt(k.record_value).map((s) => `"${s}"`).join(' ')}`]);
    expect(rotate().step).toBe('await-ttl');
    // The 2 s TTL passes: wait for the switch (each run before it answers await-ttl again), not a fixed 2.1 s.
    await vi.waitFor(() => expect(rotate().step).toBe('done'), { timeout: 60_000, interval: 500 });
    const text = readFileSync(conf(), 'utf8');
    for (const k of pending) {
      const path = join(keyDir(), `example.test.${k.selector}.key`);
      expect(text).toContain(`selector = "${k.selector}"`);
      const st = statSync(path);
      expect([st.mode & 0o7777, st.uid, st.gid]).toEqual([0o640, 0, rspamdGid]);
    }
    for (const sel of old) expect(text).not.toContain(`selector = "${sel}"`);
    expect(readdirSync(keyDir()).sort()).toEqual(pending.map((k) => `example.test.${k.selector}.key`).sort());
    // Rspamd reads the new configuration at its next start (the helper reloads it when systemd runs it).
    await rspamd?.stop();
    rspamd = await startRspamd(dir, prepared);
    const message = ['From: alice@example.test', 'To: bob@elsewhere.invalid', 'Subject: after the rotation', `Date: ${new Date().toUTCString()}`, 'Message-ID: <h2@example.test>', '', 'Rotated.', ''].join('\r\n');
    const signed = await postfix!.send('alice@example.test', 'bob@elsewhere.invalid', message);
    const results = await dkimVerify(signed, { host: '127.0.0.1', port: knot.port });
    expect(results.sort()).toEqual(pending.map((k) => `${k.selector} ${k.algorithm === 'rsa' ? 'rsa-sha256' : 'ed25519-sha256'} pass`).sort());
  }, 300_000);
});
