/**
 * Issue 34, item 3: the Debian package on a stock Debian 12 system under
 * systemd (systemd-nspawn, test/helpers/nspawn.ts), with no Node.js in it:
 * the package brings its own. The guest has no network, so the package is
 * installed with `apt-get install ./mailsvc_<v>-1_amd64.deb` and its
 * Depends already in the root (apt resolves the local file offline; the
 * Recommends it cannot fetch are left out). Then: the service is active,
 * /health and /panel/ answer, `apt remove` keeps the data (a domain added
 * before is there after installing again), a newer package switches
 * `current` and runs the migrations, an older one does not downgrade, and
 * `apt purge` says what it keeps.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from './helpers/guest-api.js';
import { bootGuest, makeOverlay, type Guest, type Overlay } from './helpers/nspawn.js';
import { ADMIN_PASSWORD, installedGuestUnavailable, waitHealthy } from './helpers/installed-guest.js';
import { REPO_ROOT } from './helpers/cli.js';
import { buildDebPackage, stageRelease } from './helpers/releases.js';
import { skipNotice } from './helpers/services.js';

const { missing, lower } = installedGuestUnavailable();
if (missing) skipNotice('a Debian 12 guest under systemd-nspawn', missing);

const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** The next patch release: the "newer .deb". */
const NEXT = VERSION.replace(/^(\d+)\.(\d+)\.(\d+).*$/, (_m, a: string, b: string, c: string) => `${a}.${b}.${Number(c) + 1}`);
const DOMAIN = 'kept.example.test';

describe.skipIf(missing !== null)('the .deb installed on a Debian 12 host with no Node.js (nspawn)', () => {
  let tmp: string;
  let overlay: Overlay;
  let guest: Guest;
  const debs: Record<string, string> = {};

  const apt = (args: string[]) => guest.run(['apt-get', '-y', '-o', 'Dpkg::Use-Pty=0', ...args], { env: { DEBIAN_FRONTEND: 'noninteractive' }, timeoutMs: 600_000 });
  const active = async (unit: string): Promise<string> => (await guest.run(['systemctl', 'is-active', unit])).stdout.trim();
  const current = async (): Promise<string> => (await guest.sh('readlink /opt/mailsvc/current')).trim();
  const domains = async (): Promise<string[]> => (JSON.parse(await guest.sh('mailsvc domains list --json')) as { items: { name: string }[] }).items.map((d) => d.name);

  beforeAll(async () => {
    tmp = mkdtempSync('/var/tmp/mailsvc-deb-e2e-');
    const key = join(tmp, 'signing.pem');
    writeFileSync(key, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    mkdirSync(join(tmp, 'debs'));
    for (const v of [VERSION, NEXT]) debs[v] = basename(buildDebPackage(stageRelease(join(tmp, `stage-${v}`), v, key), join(tmp, 'debs')));
    overlay = makeOverlay(lower);
    guest = await bootGuest(overlay.merged, { binds: [{ host: join(tmp, 'debs'), guest: '/srv/debs' }], logDir: tmp, timeoutMs: 180_000 });
  }, 60 * 60_000);
  afterAll(async () => {
    await guest?.halt();
    overlay?.remove();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }, 180_000);

  it('the guest has no node: what runs mailsvc is the package\'s own', async () => {
    expect((await guest.run(['sh', '-c', 'command -v node nodejs'])).code).not.toBe(0);
  });

  it('apt-get install ./mailsvc_<v>-1_amd64.deb: the service active, /health ok, the launcher on Node 24', async () => {
    const r = await apt(['install', `/srv/debs/${debs[VERSION]}`]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('done: migrations');
    expect(await active('mailsvc.service')).toBe('active');
    await waitHealthy(guest);
    expect(await current()).toBe(`releases/${VERSION}`);
    expect((await guest.sh('readlink /usr/local/bin/mailsvc')).trim()).toBe('/opt/mailsvc/current/bin/mailsvc');
    const v = JSON.parse(await guest.sh('mailsvc --version --json')) as { version: string; node: string; runtime: string };
    expect(v).toMatchObject({ version: VERSION, runtime: 'bundled' });
    expect(v.node).toMatch(/^v24\./);
  }, 15 * 60_000);

  it('/panel/ is served (200, the built panel) at once: a new install\'s settings file switches it on', async () => {
    const r = await api(guest, 'GET', '/panel/');
    expect(r.status, JSON.stringify(r)).toBe(200);
    expect(String(r.body.text)).toContain('<html');
    expect(await guest.sh('grep ^MAILSVC_ENABLE_WEB_PANEL= /etc/mailsvc/mailsvc.conf')).toBe('MAILSVC_ENABLE_WEB_PANEL=yes\n');
  }, 5 * 60_000);

  it('apt remove keeps the data and settings; installing again finds the domain added before', async () => {
    const pw = await guest.run(['mailsvc', 'admin', 'set-password', '--stdin'], { input: `${ADMIN_PASSWORD}\n`, timeoutMs: 120_000 });
    expect(pw.code, pw.stderr).toBe(0);
    await guest.sh(`mailsvc add domain ${DOMAIN}`);
    expect(await domains()).toContain(DOMAIN);

    const rm = await apt(['remove', 'mailsvc']);
    expect(rm.code, rm.stdout + rm.stderr).toBe(0);
    expect(await active('mailsvc.service')).not.toBe('active');
    expect((await guest.run(['test', '-e', '/opt/mailsvc'])).code).not.toBe(0);
    expect((await guest.run(['test', '-e', '/usr/local/bin/mailsvc'])).code).not.toBe(0);
    expect((await guest.run(['test', '-e', '/etc/systemd/system/mailsvc.service'])).code).not.toBe(0);
    await guest.sh('test -d /var/lib/mailsvc && test -f /etc/mailsvc/mailsvc.conf && grep -q MAILSVC_ADMIN_PASSWORD_HASH /etc/mailsvc/mailsvc.conf && id mailsvc');

    const again = await apt(['install', `/srv/debs/${debs[VERSION]}`]);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    await waitHealthy(guest);
    expect(await domains()).toContain(DOMAIN);
  }, 15 * 60_000);

  it('a newer .deb switches current and runs its migrations; an older one does not downgrade and says so', async () => {
    const up = await apt(['install', `/srv/debs/${debs[NEXT]}`]);
    expect(up.code, up.stdout + up.stderr).toBe(0);
    expect(up.stdout).toContain(`/opt/mailsvc/current → releases/${NEXT} (was releases/${VERSION}`);
    expect(up.stdout).toContain('done: migrations');
    expect(await current()).toBe(`releases/${NEXT}`);
    await waitHealthy(guest);
    expect((JSON.parse(await guest.sh('mailsvc --version --json')) as { version: string }).version).toBe(NEXT);
    expect((JSON.parse(await guest.sh('mailsvc db migrate --json')) as { applied: string[] }).applied).toEqual([]);
    expect(await domains()).toContain(DOMAIN);

    const down = await apt(['install', '--allow-downgrades', `/srv/debs/${debs[VERSION]}`]);
    expect(down.code, down.stdout + down.stderr).toBe(0);
    expect(down.stdout).toContain(`${NEXT} is newer than this release ${VERSION}, nothing was downgraded`);
    expect(await current()).toBe(`releases/${NEXT}`);
    await waitHealthy(guest);
  }, 20 * 60_000);

  it('apt purge says what it keeps and how to remove it, and keeps it', async () => {
    const r = await apt(['purge', 'mailsvc']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    for (const kept of ['/var/lib/mailsvc', '/etc/mailsvc', '/var/backups/mailsvc', '/var/log/mailsvc', 'the user and group mailsvc', 'userdel mailsvc']) expect(r.stdout, kept).toContain(kept);
    await guest.sh('test -d /var/lib/mailsvc && test -f /etc/mailsvc/mailsvc.conf && id mailsvc');
    expect((await guest.run(['test', '-e', '/opt/mailsvc'])).code).not.toBe(0);
  }, 10 * 60_000);
});
