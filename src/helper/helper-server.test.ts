import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findProgram } from '../../test/helpers/mail-daemons.js';
import { runCli } from '../../test/helpers/cli.js';
import { skipNotice } from '../../test/helpers/services.js';
import { exchange, request, startHelperProcess } from '../../test/helpers/helper-process.js';
import type { HelperProcess } from '../../test/helpers/helper-process.js';
import { SocketHelperClient } from './socket-client.js';

const SETTINGS = {
  MAILSVC_DOVECOT_CONFIG: '/srv/dovecot/dovecot.conf',
  MAILSVC_POSTFIX_CONFIG_DIR: '/srv/postfix',
  MAILSVC_FAIL2BAN_CONFIG_DIR: '/srv/fail2ban',
  MAILSVC_FAIL2BAN_SOCKET: '/srv/fail2ban.sock',
};

describe('mailsvc helper serve: actions run as their table says, and are logged', () => {
  let h: HelperProcess;
  beforeAll(async () => {
    h = await startHelperProcess({ env: SETTINGS });
  }, 30_000);
  afterAll(async () => {
    await h?.stop();
  });

  it('doveadm-kick runs doveadm with the helper’s own config and the validated user', async () => {
    const r = await new SocketHelperClient(h.socket).run('doveadm-kick', ['Alice@Example.org']);
    expect(r).toEqual({ code: 0, stdout: 'doveadm ok\n', stderr: '' });
    expect(h.ran()).toEqual(['doveadm -c /srv/dovecot/dovecot.conf kick -- alice@example.org']);
  });

  it('calls made together by one client all get their answer: it never holds more connections than the helper admits per process', async () => {
    // A doveadm that takes a second, so the calls overlap in the helper (4 connections per process at most).
    const bin = mkdtempSync(join(tmpdir(), 'mailsvc-slow-doveadm-'));
    writeFileSync(join(bin, 'doveadm'), '#!/bin/sh\nsleep 1\nexit 0\n', { mode: 0o755 });
    const slow = await startHelperProcess({ env: { ...SETTINGS, PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` } });
    try {
      const client = new SocketHelperClient(slow.socket);
      const users = Array.from({ length: 10 }, (_, i) => `user${i}@example.org`);
      const results = await Promise.allSettled(users.map((u) => client.run('doveadm-kick', [u])));
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value.code : String(r.reason)))).toEqual(users.map(() => 0));
    } finally {
      await slow.stop();
      rmSync(bin, { recursive: true, force: true });
    }
  }, 60_000);

  it('reload <daemon> runs each daemon’s reload with the paths from the helper’s settings', async () => {
    const client = new SocketHelperClient(h.socket);
    for (const daemon of ['postfix', 'dovecot', 'fail2ban', 'rspamd']) await client.run('reload', [daemon]);
    expect(h.ran().slice(-4)).toEqual([
      'postfix -c /srv/postfix reload',
      'doveadm -c /srv/dovecot/dovecot.conf reload',
      'fail2ban-client -c /srv/fail2ban -s /srv/fail2ban.sock reload',
      'systemctl reload rspamd.service',
    ]);
  });

  it('logs every call: action, arguments, result and duration; a refusal too', async () => {
    await exchange(h.socket, request(9, 'reload', ['nftables']), 1);
    const helperCalls = (): Record<string, unknown>[] => h.logs().filter((l) => l.helper !== undefined).map((l) => l.helper as Record<string, unknown>);
    // The log line is written after the answer: wait for it (up to 30 s on a busy machine).
    await vi.waitFor(() => expect(helperCalls().length).toBeGreaterThanOrEqual(6), { timeout: 30_000, interval: 20 });
    const calls = helperCalls();
    expect(calls[0]).toMatchObject({ action: 'doveadm-kick', args: ['Alice@Example.org'], ok: true, code: 0 });
    expect(typeof calls[0]?.duration_ms).toBe('number');
    expect(calls.at(-1)).toMatchObject({ action: 'reload', args: ['nftables'], ok: false, error: 'invalid-argument' });
  });
});

describe('mailsvc helper run: the CLI side', () => {
  it('an unreachable helper is exit 69 naming the socket unit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-helper-cli-'));
    const r = await runCli(['helper', 'run', 'doveadm-kick', 'alice@example.org'], { env: { MAILSVC_DATA_DIR: dir, MAILSVC_HELPER: `unix:${dir}/none.sock` } });
    expect(r.code).toBe(69);
    expect(r.stderr).toMatch(/^mailsvc: cannot reach mailsvc-helper at .*none\.sock \(ENOENT\); start mailsvc-helper\.socket/);
  });

  it('direct mode runs the real program in-process (here: postfix on a config dir without main.cf: Postfix is absent, exit 69)', async () => {
    // (postfix writes its fatal message to syslog, and to stderr only at a terminal.)
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-helper-cli-'));
    const env = { MAILSVC_DATA_DIR: dir, MAILSVC_HELPER: 'direct', MAILSVC_POSTFIX_CONFIG_DIR: dir };
    const r = await runCli(['helper', 'run', 'reload', 'postfix'], { env });
    expect(r.code).toBe(69);
    // An absent daemon is the caller's to report: logged at info, so at the CLI's default level
    // (warn) stderr holds only the one error line saying what to do; at info the record is there too.
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    const logged = await runCli(['helper', 'run', 'reload', 'postfix'], { env: { ...env, MAILSVC_LOG_LEVEL: 'info' } });
    expect(logged.stderr).toMatch(/"level":30,.*"action":"reload","args":\["postfix"\],"ok":false,"error":"unavailable"/);
    const line = r.stderr.trimEnd().split('\n').at(-1);
    if (findProgram('postfix')) expect(line).toBe(`mailsvc: Postfix is not set up here (no main.cf in ${dir}): apt-get install postfix, or set MAILSVC_POSTFIX_CONFIG_DIR to its configuration directory`);
    else expect(line).toBe('mailsvc: Postfix is not installed here (no postfix on the PATH): apt-get install postfix');
    const refused = await runCli(['helper', 'run', 'reload', 'sshd'], { env });
    expect(refused.code).toBe(2);
    expect(refused.stderr.trimEnd().split('\n').at(-1)).toMatch(/^mailsvc: reload <daemon>: daemon must be one of postfix, dovecot, fail2ban, rspamd/);
  });

  it.skipIf(process.getuid?.() !== 0)('direct mode as root takes the programs it runs from the environment, not from a settings file the service user could change', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-helper-cli-'));
    const marker = join(dir, 'evil-ran');
    const evil = join(dir, 'evil');
    writeFileSync(evil, `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
    writeFileSync(join(dir, 'mailsvc.conf'), `MAILSVC_DOVEADM=${evil}\n`);
    // The service's data directory (a checkout's var/, or one the service user owns): not root's alone.
    chownSync(dir, 65534, 65534);
    // The real doveadm runs (and fails here: no Dovecot running), or is not installed; the script named in the file does not run.
    const r = await runCli(['helper', 'run', 'doveadm-kick', 'alice@example.org'], { env: { MAILSVC_DATA_DIR: dir, MAILSVC_HELPER: 'direct' } });
    if (findProgram('doveadm')) expect(r.stderr).toMatch(/mailsvc: doveadm exited \d+/);
    else expect(r.stderr).toMatch(/mailsvc: Dovecot is not installed here \(no doveadm on the PATH\): apt-get install dovecot-core/);
    expect(existsSync(marker)).toBe(false);
  });

  it('the old sudo prefix in MAILSVC_DOVEADM is a settings error (78)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-helper-cli-'));
    const r = await runCli(['helper', 'run', 'doveadm-kick', 'a@example.org'], { env: { MAILSVC_DATA_DIR: dir, MAILSVC_DOVEADM: 'sudo -n /usr/bin/doveadm' } });
    expect(r.code).toBe(78);
    expect(r.stderr).toMatch(/MAILSVC_DOVEADM.*mailsvc-helper/);
  });
});

const activate = findProgram('systemd-socket-activate');
if (!activate) skipNotice('systemd-socket-activate', 'not installed');

describe('socket activation (systemd-socket-activate passes the listening socket as fd 3)', () => {
  it.skipIf(!activate)('the helper serves the inherited socket', async () => {
    const h = await startHelperProcess({
      wrap: (socket, env) => [activate ?? '', '-l', socket, ...Object.entries(env).flatMap(([k, v]) => ['-E', `${k}=${v}`])],
    });
    try {
      const r = await new SocketHelperClient(h.socket).run('doveadm-kick', ['alice@example.org']);
      expect(r.code).toBe(0);
      expect(h.ran()).toEqual(['doveadm kick -- alice@example.org']);
      expect(h.logs().some((l) => l.socket === 'inherited (fd 3)')).toBe(true);
    } finally {
      await h.stop();
    }
  });
});
