import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { REPO_ROOT } from '../../../test/helpers/cli.js';
import { runCliAsNobody } from '../../../test/helpers/unprivileged-client.js';
import { startHelperProcess } from '../../../test/helpers/helper-process.js';
import type { HelperProcess } from '../../../test/helpers/helper-process.js';
import { machineConfigMissing, skipNotice } from '../../../test/helpers/services.js';

const NOBODY = 65534;
function has(cmd: string, args: string[]): boolean {
  return spawnSync(cmd, args, { stdio: 'ignore', timeout: 30_000 }).status === 0;
}
const canRun = process.getuid?.() === 0 && has('setpriv', ['--version']) && has('postconf', ['-d', 'mail_version']) && has('fail2ban-client', ['--version']);
if (!canRun) skipNotice('root, setpriv, postfix and fail2ban', 'needed to run the service as an unprivileged user beside a root helper');
// The test copies the machine's Postfix and fail2ban configurations (it writes its own main.cf).
const unconfigured = canRun ? machineConfigMissing(['/etc/postfix/master.cf', '/etc/fail2ban/jail.conf', '/etc/fail2ban/filter.d']) : null;
if (unconfigured !== null) skipNotice("the machine's Postfix and fail2ban configuration", unconfigured);

/**
 * The service runs as an unprivileged user: it cannot write /etc. `limits
 * apply` sends the numbers to the root helper, which renders, checks and
 * reloads; the files stay root's. Here the CLI runs as `nobody` against
 * daemon directories only root can write, through the helper's real socket.
 */
describe.skipIf(!canRun || unconfigured !== null)('limits apply from an unprivileged service, through the root helper', { timeout: 120_000 }, () => {
  let dir: string;
  let helper: HelperProcess;
  let env: Record<string, string>;
  // The bundle as nobody, wherever this checkout is (a clone under /root is not reachable by nobody).
  const asNobody = (args: string[]) => runCliAsNobody(args, { env, timeoutMs: 90_000 });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-limits-priv-'));
    chmodSync(dir, 0o755);
    const postfix = join(dir, 'postfix');
    const f2b = join(dir, 'fail2ban');
    cpSync('/etc/postfix', postfix, { recursive: true, filter: (s) => !s.endsWith('/sasl') });
    writeFileSync(join(postfix, 'main.cf'), 'compatibility_level = 3.6\nmyhostname = mail.example.org\n');
    cpSync('/etc/fail2ban', f2b, { recursive: true });
    for (const n of readdirSync(join(f2b, 'jail.d'))) rmSync(join(f2b, 'jail.d', n));
    copyFileSync(join(REPO_ROOT, 'deploy/fail2ban/filter.d/mailsvc-auth.conf'), join(f2b, 'filter.d/mailsvc-auth.conf'));
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o750 });
    chownSync(data, NOBODY, NOBODY);
    writeFileSync(join(dir, 'auth.log'), '');
    const daemons = {
      MAILSVC_POSTFIX_CONFIG_DIR: postfix,
      MAILSVC_FAIL2BAN_CONFIG_DIR: f2b,
      MAILSVC_FAIL2BAN_SOCKET: join(dir, 'f2b.sock'),
      MAILSVC_RSPAMD_LOCAL_DIR: join(dir, 'no-rspamd/local.d'),
      MAILSVC_DOVECOT_CONFIG: join(dir, 'no-dovecot/dovecot.conf'),
      MAILSVC_AUTH_LOG: join(dir, 'auth.log'),
      MAILSVC_FAIL2BAN_JAILS: 'mailsvc-auth',
    };
    helper = await startHelperProcess({ fakes: false, env: { ...daemons, MAILSVC_HELPER_SOCKET_GROUP: String(NOBODY) } });
    chmodSync(helper.dir, 0o755);
    env = { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', HOME: data, MAILSVC_DATA_DIR: data, MAILSVC_HELPER: `unix:${helper.socket}`, ...daemons };
    const migrate = asNobody(['db', 'migrate']);
    expect(migrate.status, migrate.stderr).toBe(0);
  });
  afterAll(async () => {
    await helper?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the unprivileged user cannot write the daemon files itself', () => {
    const r = spawnSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', 'sh', '-c', `echo x >> ${join(dir, 'postfix/main.cf')}`], { encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/Permission denied/);
  });

  it('limits set + limits apply as nobody: the helper renders, checks and writes; the files stay root-owned', async () => {
    const set = asNobody(['limits', 'set', 'smtp-recipient-limit', '333']);
    expect(set.status, set.stderr).toBe(0);
    expect(asNobody(['limits', 'set', 'fail2ban-mailsvc-auth-maxretry', '4']).status).toBe(0);
    const r = asNobody(['limits', 'apply', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { daemons: { daemon: string; status: string }[] };
    expect(report.daemons.map((d) => [d.daemon, d.status])).toEqual([['postfix', 'changed'], ['fail2ban', 'changed'], ['rspamd', 'skipped'], ['dovecot', 'skipped']]);
    const mainCf = join(dir, 'postfix/main.cf');
    expect(execFileSync('postconf', ['-c', join(dir, 'postfix'), '-h', 'smtpd_recipient_limit'], { encoding: 'utf8' }).trim()).toBe('333');
    expect(readFileSync(mainCf, 'utf8')).toContain('myhostname = mail.example.org');
    expect(statSync(mainCf).uid).toBe(0);
    const jail = join(dir, 'fail2ban/jail.d/mailsvc-mailsvc-auth.local');
    expect(readFileSync(jail, 'utf8')).toContain('maxretry = 4');
    expect(statSync(jail).uid).toBe(0);
    // The helper's journal line (its log is written asynchronously).
    await vi.waitFor(() => expect(helper.logs().map((l) => (l.helper as { action?: string } | undefined)?.action)).toContain('apply-limits'), { timeout: 30_000 });
  });
});
