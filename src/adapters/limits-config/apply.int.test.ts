import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { machineConfigMissing, skipNotice } from '../../../test/helpers/services.js';
import { copyDebianDovecotConfig, debianDovecotConfigUnavailable } from '../../../test/helpers/package-config.js';
import { LIMITS } from '../../shared/limit-keys.js';
import type { LimitValues } from '../../shared/limit-keys.js';
import pino from 'pino';
import { dovecotChecker } from '../config-applier/index.js';
import { loadJailSettings } from '../../config/jail-settings.js';
import { HelperRunner } from '../../helper/runner.js';
import { helperConfig } from '../../../test/helpers/helper-config.js';
import type { JailPlanInput } from './jail-plan.js';
import type { DaemonReloader } from '../config-applier/index.js';
import { DaemonState } from './daemon-state.js';
import type { LimitsPaths } from './daemon-state.js';
import { limitRows } from './drift.js';
import { LimitsApplier } from './apply.js';
import type { ApplyReport, LimitsApplyOutcome } from './apply.js';
import { renderDovecot } from './render.js';

/** `limits apply` on temp copies of the Debian configurations, judged by the daemons' own checkers. */
function has(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore', timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}
const tools = { postfix: has('postconf', ['-d', 'mail_version']), rspamd: has('rspamadm', ['--version']), dovecot: has('doveconf', ['-d', 'base_dir']), fail2ban: has('fail2ban-client', ['--version']) };
for (const [tool, ok] of Object.entries(tools)) if (!ok) skipNotice(`${tool} (Debian package)`, 'not installed');
// The test copies the machine's own Postfix, Rspamd and fail2ban configurations: installed is not enough, they must be there.
const unconfigured = tools.postfix && tools.rspamd && tools.dovecot && tools.fail2ban
  ? machineConfigMissing(['/etc/postfix/master.cf', '/etc/rspamd/rspamd.conf', '/etc/fail2ban/jail.conf'])
  : null;
if (unconfigured !== null) skipNotice("the machine's Postfix, Rspamd, Dovecot and fail2ban configuration", unconfigured);
// Dovecot's configuration as its package installs it (/usr/share/dovecot), not the machine's /etc/dovecot: a machine
// that runs a real Dovecot may have drop-ins there (another program's 99-mailsvc-limits.conf failed this test).
const noDovecotDefaults = tools.dovecot ? debianDovecotConfigUnavailable() : null;
if (noDovecotDefaults !== null) skipNotice("Dovecot's package configuration", noDovecotDefaults);
const all = tools.postfix && tools.rspamd && tools.dovecot && tools.fail2ban && unconfigured === null && noDovecotDefaults === null;

/** The report of an apply that must have succeeded. */
function ok(o: LimitsApplyOutcome): ApplyReport {
  if (!o.ok) throw new Error(o.detail);
  return o.report;
}

const DEFAULTS: LimitValues = Object.fromEntries(LIMITS.map((l) => [l.key, l.default]));
const values = (over: Record<string, number> = {}): LimitValues => ({ ...DEFAULTS, ...over });

/** Every file under a directory with its bytes and mode. */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out[p.slice(root.length)] = `${(statSync(p).mode & 0o7777).toString(8)}:${readFileSync(p).toString('base64')}`;
    }
  };
  walk(root);
  return out;
}

/** Says every daemon runs, so that the reloads can be observed (the real ones go through the helper). */
class RunningState extends DaemonState {
  override running(): Promise<boolean> {
    return Promise.resolve(true);
  }
}

describe.skipIf(!all)('limits apply against postfix check, rspamadm configtest, doveconf and fail2ban-client -t', () => {
  let dir: string;
  let paths: LimitsPaths;
  let reloads: string[];
  let jails: Omit<JailPlanInput, 'fail2banDir'>;
  const reloader: DaemonReloader = { reload: async (d) => void reloads.push(d) };
  const postconf = (...names: string[]): string[] => execFileSync('postconf', ['-c', paths.postfixDir, '-h', ...names], { encoding: 'utf8' }).trim().split('\n');

  /** The privileged helper of this test's daemons, run in this process. */
  const helper = (): HelperRunner =>
    new HelperRunner(helperConfig({
      dovecotConfig: paths.dovecotConfig, postfixConfigDir: paths.postfixDir, fail2banSocket: paths.fail2banSocket, fail2banConfigDir: paths.fail2banDir,
      rspamdLocalDir: paths.rspamdLocalDir, jails: jails.settings, authLog: jails.authLog,
    }), pino({ level: 'silent' }));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-limits-'));
    reloads = [];
    for (const f of ['mail.log', 'nginx.log']) writeFileSync(join(dir, f), '');
    jails = { settings: loadJailSettings({ MAILSVC_MAIL_LOG: join(dir, 'mail.log'), MAILSVC_NGINX_ERROR_LOG: join(dir, 'nginx.log') }), authLog: join(dir, 'auth.log') };
    paths = {
      postfixDir: join(dir, 'postfix'),
      rspamdLocalDir: join(dir, 'rspamd/local.d'),
      dovecotConfig: join(dir, 'dovecot/dovecot.conf'),
      fail2banDir: join(dir, 'fail2ban'),
      fail2banSocket: join(dir, 'f2b.sock'),
    };
    cpSync('/etc/postfix', paths.postfixDir, { recursive: true, filter: (s) => !s.endsWith('/sasl') });
    // An administrator's main.cf: its other settings must survive; the default mailbox limit is below 50 MiB.
    writeFileSync(join(paths.postfixDir, 'main.cf'), 'compatibility_level = 3.6\nmyhostname = mail.example.org\nmessage_size_limit = 10240000\nsmtpd_recipient_limit =\n    77\n');
    chmodSync(join(paths.postfixDir, 'main.cf'), 0o644);
    cpSync('/etc/rspamd', join(dir, 'rspamd'), { recursive: true });
    writeFileSync(join(paths.rspamdLocalDir, 'options.inc'), 'dns {\n  timeout = 2s;\n}\n');
    copyDebianDovecotConfig(join(dir, 'dovecot'));
    cpSync('/etc/fail2ban', paths.fail2banDir, { recursive: true });
    // Debian's defaults enable sshd, whose log does not exist here: start from the mailsvc jail only.
    for (const n of readdirSync(join(paths.fail2banDir, 'jail.d'))) rmSync(join(paths.fail2banDir, 'jail.d', n));
    copyFileSync(new URL('../../../deploy/fail2ban/filter.d/mailsvc-auth.conf', import.meta.url), join(paths.fail2banDir, 'filter.d/mailsvc-auth.conf'));
    writeFileSync(join(dir, 'auth.log'), '');
    writeFileSync(join(paths.fail2banDir, 'jail.d/mailsvc-auth.local'), `[mailsvc-auth]\nenabled = true\nfilter = mailsvc-auth\nlogpath = ${join(dir, 'auth.log')}\nbackend = auto\nbanaction = dummy\n`);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('renders Postfix (read back with postconf), Rspamd and the jails, reloads each once; a second apply changes nothing', async () => {
    const state = new RunningState(paths);
    const want = values({ 'message-size-limit': 60 * 1024 * 1024, 'smtp-recipient-limit': 250, 'postfix-client-connection-rate-limit': 30, 'spam-score-reject': 12.5, 'greylist-delay': 600, 'fail2ban-mailsvc-auth-maxretry': 3, 'fail2ban-mailsvc-auth-bantime': 14_400 });
    const before = (await limitRows(want, DEFAULTS, state)).filter((r) => r.drift).map((r) => r.key);
    // Postfix runs with 10240000 and 77 (continuation line); Rspamd's local.d has no value yet: nothing read, no drift claimed.
    expect(before).toEqual(['message-size-limit', 'smtp-recipient-limit', 'postfix-client-connection-rate-limit']);

    const started = Date.now();
    const report = ok(await new LimitsApplier(state, reloader, jails).apply(want));
    console.log(`[measure] limits apply (postfix check + rspamadm configtest + doveconf + fail2ban-client -t, 6 files): ${Date.now() - started} ms`);
    expect(report.daemons.map((d) => [d.daemon, d.status, d.reloaded])).toEqual([['postfix', 'changed', true], ['rspamd', 'changed', true], ['dovecot', 'changed', true], ['fail2ban', 'changed', true]]);
    expect(reloads).toEqual(['postfix', 'rspamd', 'dovecot', 'fail2ban']);

    expect(postconf('message_size_limit', 'smtpd_recipient_limit', 'smtpd_client_connection_rate_limit', 'mailbox_size_limit', 'virtual_mailbox_limit', 'myhostname')).toEqual(
      ['62914560', '250', '30', '62914560', '62914560', 'mail.example.org'],
    );
    const local = (n: string): string => readFileSync(join(paths.rspamdLocalDir, n), 'utf8');
    expect(local('options.inc')).toBe('dns {\n  timeout = 2s;\n}\nmax_message = 62914560;\n');
    expect(local('actions.conf')).toBe('reject = 12.5;\nadd_header = 6;\ngreylist = 4;\n');
    expect(local('greylist.conf')).toBe('timeout = 600s;\nexpire = 86400s;\n');
    expect(execFileSync('doveconf', ['-c', paths.dovecotConfig, '-h', 'plugin/quota_max_mail_size'], { encoding: 'utf8' }).trim()).toBe('62914560');
    // fail2ban reads the thresholds: its own dump of the parsed configuration.
    const dump = execFileSync('fail2ban-client', ['-c', paths.fail2banDir, '-d'], { encoding: 'utf8' });
    expect(dump).toContain("['set', 'mailsvc-auth', 'maxretry', 3]");
    expect(dump).toMatch(/\['set', 'mailsvc-auth', 'bantime', '?14400'?\]/);

    expect((await limitRows(want, DEFAULTS, state)).filter((r) => r.drift)).toEqual([]);
    // Someone edits a rendered file by hand: show flags it.
    const actions = join(paths.rspamdLocalDir, 'actions.conf');
    writeFileSync(actions, local('actions.conf').replace('reject = 12.5;', 'reject = 20; # by hand'));
    expect((await limitRows(want, DEFAULTS, state)).filter((r) => r.drift).map((r) => [r.key, r.value, r.in_force])).toEqual([['spam-score-reject', 12.5, 20]]);
    writeFileSync(actions, 'reject = 12.5;\nadd_header = 6;\ngreylist = 4;\n');
    const again = ok(await new LimitsApplier(state, reloader, jails).apply(want));
    expect(again.daemons.map((d) => d.status)).toEqual(['unchanged', 'unchanged', 'unchanged', 'unchanged']);
    expect(reloads).toEqual(['postfix', 'rspamd', 'dovecot', 'fail2ban']);
  });

  it('a render the real checker refuses (an administrator\'s broken greylist.conf kept) leaves EVERY file of every daemon as it was, nothing reloaded', async () => {
    writeFileSync(join(paths.rspamdLocalDir, 'greylist.conf'), 'whitelisted_ip = "x" {\n');
    const before = snapshot(dir);
    const applier = new LimitsApplier(new RunningState(paths), reloader, jails);
    expect(await applier.apply(values({ 'message-size-limit': 30 * 1024 * 1024 }))).toMatchObject({ ok: false, detail: expect.stringMatching(/check of rspamd failed: .*rspamadm exited 1: .*greylist\.conf.*Every file was restored/) });
    expect(snapshot(dir)).toEqual(before);
    expect(postconf('message_size_limit')).toEqual(['10240000']);
    expect(reloads).toEqual([]);
  });

  it('fail2ban-client -t refuses when the jails as rendered cannot load (a jail naming a missing filter): nothing placed', async () => {
    // An administrator's own file, read after mailsvc's: the postfix jail that mailsvc enables now names a missing filter.
    writeFileSync(join(paths.fail2banDir, 'jail.d/zz-admin.local'), '[postfix]\nfilter = no-such-filter\n');
    const before = snapshot(dir);
    expect(await new LimitsApplier(new RunningState(paths), reloader, jails).apply(values())).toMatchObject({ ok: false, detail: expect.stringMatching(/check of fail2ban failed: .*no-such-filter/) });
    expect(snapshot(dir)).toEqual(before);
  });

  it('doveconf judges the Dovecot file on a staged copy: an unclosed section is refused, the rendered one accepted', async () => {
    const checker = dovecotChecker(paths.dovecotConfig);
    const path = join(dir, 'dovecot/conf.d/99-mailsvc-limits.conf');
    expect(await checker.check([{ path, content: Buffer.from('plugin {\n  quota_max_mail_size = 1\n') }])).toMatchObject({ ok: false, detail: expect.stringMatching(/doveconf exited .*Missing '}'/) });
    expect(await checker.check([{ path, content: Buffer.from(renderDovecot(values())) }])).toEqual({ ok: true });
    expect(readdirSync(join(dir, 'dovecot/conf.d'))).not.toContain('99-mailsvc-limits.conf');
  });

  it('a failing reload restores every file and reloads the daemons again', async () => {
    const before = snapshot(dir);
    let failed = false;
    const flaky: DaemonReloader = {
      reload: async (d) => {
        reloads.push(d);
        if (d === 'fail2ban' && !failed) {
          failed = true;
          throw new Error('fail2ban refused');
        }
      },
    };
    expect(await new LimitsApplier(new RunningState(paths), flaky, jails).apply(values({ 'smtp-recipient-limit': 9 }))).toMatchObject({ ok: false, detail: expect.stringMatching(/reload of fail2ban failed/) });
    expect(snapshot(dir)).toEqual(before);
    expect(reloads).toEqual(['postfix', 'rspamd', 'dovecot', 'fail2ban', 'postfix', 'rspamd', 'dovecot', 'fail2ban']);
  });

  it('a daemon that does not run is not reloaded; a missing configuration location is skipped', async () => {
    rmSync(join(dir, 'rspamd'), { recursive: true });
    const report = ok(await new LimitsApplier(new DaemonState(paths), reloader, jails).apply(values()));
    expect(report.daemons.map((d) => [d.daemon, d.status, d.reloaded])).toEqual([['postfix', 'changed', false], ['dovecot', 'changed', false], ['fail2ban', 'changed', false], ['rspamd', 'skipped', false]]);
    expect(reloads).toEqual([]);
  });

  it('the helper action apply-limits renders from the numbers it is sent, validating each; bad values change nothing', async () => {
    const daemonKeys = LIMITS.filter((l) => l.appliesTo.some((t) => t !== 'service'));
    const send = (over: Record<string, unknown>): string => JSON.stringify({ ...Object.fromEntries(daemonKeys.map((l) => [l.key, l.default])), ...over });
    const before = snapshot(dir);
    for (const bad of [send({ 'message-size-limit': -1 }), send({ 'smtp-recipient-limit': '1; rm -rf /' }), send({ 'api-auth-fail-limit': 3 }), send({ 'no-such-key': 1 }), '{"message-size-limit": 1', '[]']) {
      expect(await helper().answer('apply-limits', [bad])).toMatchObject({ ok: false, error: 'invalid-argument' });
    }
    expect(snapshot(dir)).toEqual(before);
    const a = await helper().answer('apply-limits', [send({ 'smtp-recipient-limit': 321, 'fail2ban-dovecot-maxretry': 7 })]);
    expect(a.ok).toBe(true);
    const outcome = JSON.parse(a.ok ? a.stdout : '{}') as LimitsApplyOutcome;
    expect(ok(outcome).daemons.map((d) => [d.daemon, d.status])).toEqual([['postfix', 'changed'], ['rspamd', 'changed'], ['dovecot', 'changed'], ['fail2ban', 'changed']]);
    expect(postconf('smtpd_recipient_limit')).toEqual(['321']);
    expect(readFileSync(join(paths.fail2banDir, 'jail.d/mailsvc-dovecot.local'), 'utf8')).toContain('maxretry = 7');
  });
});
