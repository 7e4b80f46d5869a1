/**
 * Issue 21: the release archive installed on a real Debian 12 system under
 * systemd (systemd-nspawn over a debootstrap root, test/helpers/nspawn.ts),
 * the way docs/install.md tells an administrator to: unpack, `mailsvc
 * install`, set the password, sign in with TOTP. Then what only a real
 * install shows: the units start and stay up, the helper is socket-activated
 * as root, the service runs as `mailsvc` in its sandbox and can store what
 * the API changes, `mailsvc` can write nothing root runs or reads, a reboot
 * brings it all back, and `mailsvc uninstall` keeps the data.
 *
 * MAILSVC_TEST_RELEASE_ARCHIVE=<path to mailsvc-<v>.tar.gz> installs that
 * archive instead of one built from the working tree (to run this test
 * against another commit's release).
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, enrolTotp, signIn } from './helpers/guest-api.js';
import { bootGuest, cachedRoot, makeOverlay, nspawnUnavailable, type Guest, type Overlay } from './helpers/nspawn.js';
import { REPO_ROOT } from './helpers/cli.js';
import { publishRelease, stageRelease } from './helpers/releases.js';
import { skipNotice } from './helpers/services.js';
import { oathtoolInstalled } from './helpers/totp.js';
import { PRIVILEGE_WALK } from './helpers/privilege-walk.js';

const ADMIN = 'admin';
const PASSWORD = 'a long installed-host password';
const BACKUP_CALENDAR = '*-*-* 03:17:00';

let missing = nspawnUnavailable() ?? (oathtoolInstalled() ? null : 'oathtool missing (apt-get install oathtool)');
let lower = '';
if (!missing) {
  try {
    lower = cachedRoot();
  } catch (e) {
    missing = `the Debian 12 root could not be built (no network to deb.debian.org?): ${String((e as { stderr?: Buffer }).stderr ?? e).slice(-400)}`;
  }
}
if (missing) skipNotice('a Debian 12 guest under systemd-nspawn', missing);

/** The release archive: npm run release (scripts/release.mjs) on the working tree, or the one named. */
function releaseArchive(tmp: string): string {
  const given = process.env.MAILSVC_TEST_RELEASE_ARCHIVE;
  if (given) return given;
  const key = join(tmp, 'signing.pem');
  const { privateKey } = generateKeyPairSync('ed25519');
  mkdirSync(tmp, { recursive: true });
  writeFileSync(key, privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const staged = stageRelease(join(tmp, 'stage'), version, key);
  publishRelease(staged, join(tmp, 'feed'), 'https://updates.invalid/mailsvc', key, 'stable');
  return join(tmp, 'feed', 'stable', version, `mailsvc-${version}.tar.gz`);
}

describe.skipIf(missing !== null)('installed on a Debian 12 host under systemd (nspawn)', () => {
  let tmp: string;
  let overlay: Overlay;
  let guest: Guest;
  let archive: string;
  let unpacked: string;
  let bearer = '';
  let secret = '';

  const boot = async (): Promise<Guest> => bootGuest(overlay.merged, { binds: [{ host: dirname(archive), guest: '/srv/release' }], logDir: tmp, timeoutMs: 180_000 });
  const mailsvc = (args: string[], input?: string) => guest.run(['mailsvc', ...args], { input, timeoutMs: 180_000 });
  const active = async (unit: string): Promise<string> => (await guest.run(['systemctl', 'is-active', unit])).stdout.trim();
  const failedUnits = async (): Promise<string> => (await guest.run(['systemctl', '--failed', '--plain', '--no-legend', '--no-pager'])).stdout.trim();
  const mainPid = async (unit: string): Promise<number> => Number((await guest.sh(`systemctl show -p MainPID --value ${unit}`)).trim());
  const uidOf = async (pid: number): Promise<string> => ((await guest.sh(`cat /proc/${pid}/status`)).match(/^Uid:\s+(\d+)/m) ?? [])[1] ?? '';
  const healthy = async (): Promise<void> => {
    const deadline = Date.now() + 90_000;
    let last = '';
    while (Date.now() < deadline) {
      const r = await api(guest, 'GET', '/health');
      if (r.status === 200) return;
      last = JSON.stringify(r);
      await new Promise((res) => setTimeout(res, 500));
    }
    throw new Error(`the service did not answer /health: ${last}\n${(await guest.run(['journalctl', '-u', 'mailsvc', '--no-pager', '-n', '40'])).stdout}`);
  };

  beforeAll(async () => {
    tmp = mkdtempSync('/var/tmp/mailsvc-installed-host-');
    archive = releaseArchive(join(tmp, 'release'));
    unpacked = `/root/${basename(archive).replace(/\.tar\.gz$/, '')}`;
    overlay = makeOverlay(lower);
    // Node 20 (Debian 12's own is 18): the host's, same glibc.
    copyFileSync('/usr/bin/node', join(overlay.merged, 'usr/bin/node'));
    guest = await boot();
  }, 40 * 60_000);

  afterAll(async () => {
    await guest?.halt();
    overlay?.remove();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }, 180_000);

  it('1. mailsvc install from the unpacked release: units start, none failed, no unexpected warning', async () => {
    const name = basename(archive);
    await guest.sh(`cd /root && cp /srv/release/${name} /srv/release/${name}.sha256 . && sha256sum -c ${name}.sha256 && tar -xzf ${name}`);
    const r = await guest.run(['node', `${unpacked}/dist/bundle/mailsvc.js`, 'install'], { env: { MAILSVC_BACKUP_ONCALENDAR: BACKUP_CALENDAR }, timeoutMs: 300_000 });
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/left for you: set the administrator password/);
    for (const unit of ['mailsvc-helper.socket', 'mailsvc.service', 'mailsvc-backup.timer', 'mailsvc-backup-verify.timer', 'mailsvc-stats.timer', 'mailsvc-dkim-rotate.timer']) {
      expect(`${unit} ${await active(unit)}`).toBe(`${unit} active`);
    }
    expect(await guest.sh('systemctl show -p TimersCalendar --value mailsvc-backup.timer')).toContain('03:17:00');
    // The password, as docs/install.md says: set-password, then a restart.
    const pw = await mailsvc(['admin', 'set-password', '--stdin'], `${PASSWORD}\n`);
    expect(pw.code, pw.stderr).toBe(0);
    await guest.sh('systemctl restart mailsvc');
    await healthy();
    const warnings = (await guest.run(['journalctl', '-p', 'warning', '-u', 'mailsvc*', '-o', 'cat', '--no-pager'])).stdout.trim();
    expect(warnings).toBe('');
    expect(await failedUnits()).toBe('');
  }, 600_000);

  it('2. the service answers as mailsvc, the helper starts on its socket as root, the admin manages domains and accounts', async () => {
    await healthy();
    expect(await uidOf(await mainPid('mailsvc.service'))).toBe((await guest.sh('id -u mailsvc')).trim());
    secret = await enrolTotp(guest, ADMIN, PASSWORD);
    bearer = await signIn(guest, ADMIN, PASSWORD, secret);
    const domain = await api(guest, 'POST', '/domains', bearer, { name: 'example.test' });
    expect(domain.status, JSON.stringify(domain.body)).toBe(201);
    const account = await api(guest, 'POST', '/accounts', bearer, { address: 'alice@example.test', password: 'alice has a long password' });
    expect(account.status, JSON.stringify(account.body)).toBe(201);
    expect((await api(guest, 'GET', '/accounts', bearer)).body).toMatchObject({ items: [expect.objectContaining({ address: 'alice@example.test' })] });
    // Something that needs root: the helper, started by its socket.
    // Socket activation: nothing has needed root yet, so the helper is not running.
    expect(await active('mailsvc-helper.service')).toBe('inactive');
    const status = await guest.run(['runuser', '-u', 'mailsvc', '--', 'mailsvc', 'helper', 'run', 'postfix-status', '--json'], { timeoutMs: 120_000 });
    expect(status.code, `${status.stdout}${status.stderr}`).toBe(0);
    expect(await active('mailsvc-helper.service')).toBe('active');
    expect(await uidOf(await mainPid('mailsvc-helper.service'))).toBe('0');
  }, 300_000);

  it('4. settings changed through the API reach the running service and survive a restart', async () => {
    const settings = await api(guest, 'PATCH', '/admin/settings', bearer, { update_channel: 'nightly', auto_updates: true });
    expect(settings.status, JSON.stringify(settings.body)).toBe(200);
    const limits = await api(guest, 'PATCH', '/admin/limits', bearer, { 'message-size-limit': '20M' });
    expect(limits.status, JSON.stringify(limits.body)).toBe(200);
    const backups = await api(guest, 'PATCH', '/admin/backups/settings', bearer, { RETENTION_DAYS: 9 });
    expect(backups.status, JSON.stringify(backups.body)).toBe(200);
    const check = async (): Promise<void> => {
      expect((await api(guest, 'GET', '/admin/settings', bearer)).body).toMatchObject({ update_channel: 'nightly', auto_updates: true });
      expect((await api(guest, 'GET', '/admin/limits', bearer)).body).toMatchObject({ 'message-size-limit': 20 * 1024 * 1024 });
      expect(JSON.stringify((await api(guest, 'GET', '/admin/backups/settings', bearer)).body)).toMatch(/"RETENTION_DAYS":\s*"?9"?/);
    };
    await check();
    await guest.sh('systemctl restart mailsvc');
    await healthy();
    await check();
    expect(await failedUnits()).toBe('');
  }, 300_000);

  it('7. the privilege map: mailsvc can write nothing a root unit runs or reads as configuration', async () => {
    const out = await guest.sh(PRIVILEGE_WALK, { timeoutMs: 300_000 });
    const checked = Number(/^checked (\d+)$/m.exec(out)?.[1] ?? 0);
    expect(checked).toBeGreaterThan(1000); // the whole release tree, not just a few files
    expect(out).toMatch(/^root unit: mailsvc-helper\.service$/m);
    const writable = out.split('\n').filter((l) => l.startsWith('writable: '));
    expect(writable).toEqual([]);
  }, 600_000);

  it('8. after a reboot everything comes back and no unit failed', async () => {
    await guest.halt();
    guest = await boot();
    await healthy();
    expect(await active('mailsvc.service')).toBe('active');
    expect(await active('mailsvc-helper.socket')).toBe('active');
    expect(await failedUnits()).toBe('');
    // The session signed in before the reboot still holds (a second TOTP sign-in in the same 30 s step would be a replay).
    expect((await api(guest, 'GET', '/admin/settings', bearer)).body).toMatchObject({ update_channel: 'nightly' });
    expect((await api(guest, 'GET', '/admin/limits', bearer)).body).toMatchObject({ 'message-size-limit': 20 * 1024 * 1024 });
  }, 600_000);

  it('9. mailsvc uninstall removes the program and units, keeps data, backups and settings', async () => {
    const r = await mailsvc(['uninstall']);
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
    const gone = await guest.sh('for p in /opt/mailsvc /usr/local/bin/mailsvc /etc/systemd/system/mailsvc.service /etc/systemd/system/mailsvc-helper.socket; do [ -e "$p" ] || [ -L "$p" ] && echo "still there: $p"; done; true');
    expect(gone.trim()).toBe('');
    expect((await guest.sh('ls /etc/systemd/system | grep ^mailsvc || true')).trim()).toBe('');
    expect(await active('mailsvc.service')).not.toBe('active');
    const kept = await guest.sh('for p in /var/lib/mailsvc /var/backups/mailsvc /var/log/mailsvc /etc/mailsvc/mailsvc.conf; do [ -e "$p" ] && echo "kept: $p"; done; ls /var/lib/mailsvc; getent passwd mailsvc >/dev/null && echo user kept');
    expect(kept).toContain('kept: /var/lib/mailsvc\n');
    expect(kept).toContain('kept: /var/backups/mailsvc\n');
    expect(kept).toContain('kept: /var/log/mailsvc\n');
    expect(kept).toContain('kept: /etc/mailsvc/mailsvc.conf\n');
    expect(kept).toContain('user kept');
    expect(await guest.sh('grep -c MAILSVC_ADMIN_PASSWORD_HASH /etc/mailsvc/mailsvc.conf')).toMatch(/1/);
  }, 300_000);
});
