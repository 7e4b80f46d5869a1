/**
 * A Debian 12 guest (test/helpers/nspawn.ts) with the release archive
 * installed the way docs/install.md "Step by step" says: unpack, check,
 * `mailsvc install`, set the password, restart, enrol TOTP, sign in. For the
 * installed-host tests that need an installed host to start from.
 *
 * MAILSVC_TEST_RELEASE_ARCHIVE=<path to mailsvc-<v>.tar.gz> installs that
 * archive instead of one built from the working tree.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { api, enrolTotp, signIn } from './guest-api.js';
import { bootGuest, cachedRoot, makeOverlay, nspawnUnavailable, type Guest, type Overlay } from './nspawn.js';
import { REPO_ROOT } from './cli.js';
import { publishRelease, stageRelease } from './releases.js';
import { oathtoolInstalled } from './totp.js';

export const ADMIN = 'admin';
export const ADMIN_PASSWORD = 'a long installed-host password';

/** Why no guest can be installed here (null: it can), and the cached root when it can. */
export function installedGuestUnavailable(): { missing: string | null; lower: string } {
  let missing = nspawnUnavailable() ?? (oathtoolInstalled() ? null : 'oathtool missing (apt-get install oathtool)');
  let lower = '';
  if (!missing) {
    try {
      lower = cachedRoot();
    } catch (e) {
      missing = `the Debian 12 root could not be built (test/helpers/nspawn-root.sh under flock, see its output): ${String((e as { stderr?: Buffer }).stderr ?? e).slice(-600)}`;
    }
  }
  return { missing, lower };
}

/** The release archive: npm run release (scripts/release.mjs) on the working tree, or the one named. */
export function releaseArchive(tmp: string): string {
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

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a value that is not undefined; throws with the last error after `ms`. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await pause(500);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
}

export type InstalledGuest = {
  guest: Guest;
  tmp: string;
  /** A Bearer header earned with password and TOTP. */
  bearer: string;
  /** Waits until GET /health answers 200 (throws with the service's journal after 90 s). */
  healthy(): Promise<void>;
  /** Power loss and boot again (the same overlay): `guest` is the new one afterwards. */
  crashAndBoot(): Promise<Guest>;
  dispose(): Promise<void>;
};

export async function waitHealthy(guest: Guest): Promise<void> {
  const deadline = Date.now() + 90_000;
  let last = '';
  while (Date.now() < deadline) {
    const r = await api(guest, 'GET', '/health');
    if (r.status === 200) return;
    last = JSON.stringify(r);
    await new Promise((res) => setTimeout(res, 500));
  }
  throw new Error(`the service did not answer /health: ${last}\n${(await guest.run(['journalctl', '-u', 'mailsvc', '--no-pager', '-n', '40'])).stdout}`);
}

/** Boots a fresh guest over `lower` and installs the release in it, up to a signed-in administrator. */
export async function installedGuest(lower: string, name: string): Promise<InstalledGuest> {
  const tmp = mkdtempSync(`/var/tmp/mailsvc-${name}-`);
  const archive = releaseArchive(join(tmp, 'release'));
  const unpacked = `/root/${basename(archive).replace(/\.tar\.gz$/, '')}`;
  // No Node.js in the guest: the release runs on its own (runtime/bin/node).
  const overlay: Overlay = makeOverlay(lower);
  let guest: Guest | undefined;
  const dispose = async (): Promise<void> => {
    await guest?.halt();
    overlay.remove();
    rmSync(tmp, { recursive: true, force: true });
  };
  try {
    const boot = (): Promise<Guest> => bootGuest(overlay.merged, { binds: [{ host: dirname(archive), guest: '/srv/release' }], logDir: tmp, timeoutMs: 180_000 });
    guest = await boot();
    const g = guest;
    const file = basename(archive);
    await g.sh(`cd /root && cp /srv/release/${file} /srv/release/${file}.sha256 . && sha256sum -c ${file}.sha256 && tar -xzf ${file}`);
    const install = await g.run([`${unpacked}/bin/mailsvc`, 'install'], { timeoutMs: 300_000 });
    if (install.code !== 0) throw new Error(`mailsvc install exited ${install.code}\n${install.stdout}\n${install.stderr}`);
    const pw = await g.run(['mailsvc', 'admin', 'set-password', '--stdin'], { input: `${ADMIN_PASSWORD}\n`, timeoutMs: 120_000 });
    if (pw.code !== 0) throw new Error(`set-password exited ${pw.code}: ${pw.stderr}`);
    await g.sh('systemctl restart mailsvc');
    await waitHealthy(g);
    const secret = await enrolTotp(g, ADMIN, ADMIN_PASSWORD);
    const bearer = await signIn(g, ADMIN, ADMIN_PASSWORD, secret);
    const ig: InstalledGuest = {
      guest: g,
      tmp,
      bearer,
      healthy: () => waitHealthy(ig.guest),
      async crashAndBoot() {
        await ig.guest.crash();
        guest = await boot();
        ig.guest = guest;
        return guest;
      },
      dispose,
    };
    return ig;
  } catch (e) {
    await dispose();
    throw e;
  }
}
