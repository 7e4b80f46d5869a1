import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipNotice } from '../../../test/helpers/services.js';
import { commandReloader } from '../../adapters/config-applier/index.js';
import { LIMITS } from '../../shared/limit-keys.js';
import type { LimitValues } from '../../shared/limit-keys.js';
import { DaemonState } from './daemon-state.js';
import type { LimitsPaths } from './daemon-state.js';
import { limitRows } from './drift.js';
import { loadJailSettings } from '../../config/jail-settings.js';
import { LimitsApplier } from './apply.js';
import type { ApplyReport, LimitsApplyOutcome } from './apply.js';

/**
 * A private fail2ban server (its own config copy, socket, pid file, in-memory
 * database, dummy ban action: the machine's fail2ban is never touched): drift
 * read with `fail2ban-client get`, then `limits apply` reloads it for real.
 */
const canRun = (() => {
  try {
    execFileSync('fail2ban-client', ['--version'], { stdio: 'ignore' });
    return process.getuid?.() === 0;
  } catch {
    return false;
  }
})();
if (!canRun) skipNotice('fail2ban-server (Debian package fail2ban, run as root)', 'not available');

/** The report of an apply that must have succeeded. */
function ok(o: LimitsApplyOutcome): ApplyReport {
  if (!o.ok) throw new Error(o.detail);
  return o.report;
}

const DEFAULTS: LimitValues = Object.fromEntries(LIMITS.map((l) => [l.key, l.default]));

describe.skipIf(!canRun)('limits and a running fail2ban', { timeout: 60_000 }, () => {
  let dir: string;
  let paths: LimitsPaths;
  let conf: string;
  let sock: string;
  const client = (...args: string[]): string => execFileSync('fail2ban-client', ['-s', sock, ...args], { encoding: 'utf8', timeout: 20_000 }).trim();

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-f2b-'));
    conf = join(dir, 'fail2ban');
    sock = join(dir, 'f2b.sock');
    cpSync('/etc/fail2ban', conf, { recursive: true });
    for (const n of readdirSync(join(conf, 'jail.d'))) rmSync(join(conf, 'jail.d', n));
    copyFileSync(new URL('../../../deploy/fail2ban/filter.d/mailsvc-auth.conf', import.meta.url), join(conf, 'filter.d/mailsvc-auth.conf'));
    writeFileSync(join(dir, 'auth.log'), '');
    writeFileSync(join(conf, 'fail2ban.local'), `[Definition]\nlogtarget = ${join(dir, 'f2b.log')}\nsocket = ${sock}\npidfile = ${join(dir, 'f2b.pid')}\ndbfile = :memory:\n`);
    writeFileSync(join(conf, 'jail.d/mailsvc-auth.local'), `[mailsvc-auth]\nenabled = true\nfilter = mailsvc-auth\nlogpath = ${join(dir, 'auth.log')}\nbackend = polling\nbanaction = dummy\nmaxretry = 9\n`);
    execFileSync('fail2ban-client', ['-c', conf, '-s', sock, '-p', join(dir, 'f2b.pid'), '-b', 'start'], { stdio: 'ignore', timeout: 30_000 });
    paths = { postfixDir: join(dir, 'none'), rspamdLocalDir: join(dir, 'none/local.d'), dovecotConfig: join(dir, 'none/dovecot.conf'), fail2banDir: conf, fail2banSocket: sock };
  });
  afterAll(() => {
    if (sock && existsSync(sock)) execFileSync('fail2ban-client', ['-s', sock, 'stop'], { stdio: 'ignore', timeout: 30_000 });
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('show reads the running jail and flags drift; apply reloads fail2ban, which then runs with the limits', async () => {
    const state = new DaemonState(paths);
    const want: LimitValues = { ...DEFAULTS, 'fail2ban-mailsvc-auth-maxretry': 4, 'fail2ban-mailsvc-auth-bantime': 7200 };
    const row = async (key: string) => (await limitRows(want, DEFAULTS, state)).find((r) => r.key === key);
    expect(await row('fail2ban-mailsvc-auth-maxretry')).toMatchObject({ value: 4, in_force: 9, drift: true });
    // A jail that does not run has nothing in force: no drift claimed.
    expect(await row('fail2ban-sshd-maxretry')).toMatchObject({ in_force: null, drift: false });

    const reloader = commandReloader({ fail2ban: ['fail2ban-client', '-c', conf, '-s', sock, 'reload'] });
    const report = ok(await new LimitsApplier(state, reloader, { settings: loadJailSettings({ MAILSVC_FAIL2BAN_JAILS: 'mailsvc-auth' }), authLog: join(dir, 'auth.log') }).apply(want));
    expect(report.daemons.find((d) => d.daemon === 'fail2ban')).toMatchObject({ status: 'changed', reloaded: true });
    expect([client('get', 'mailsvc-auth', 'maxretry'), client('get', 'mailsvc-auth', 'bantime'), client('get', 'mailsvc-auth', 'findtime')]).toEqual(['4', '7200', '600']);
    const drifting = (await limitRows(want, DEFAULTS, state)).filter((r) => r.drift);
    expect(drifting).toEqual([]);
  });
});
