import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { exec } from '../../adapters/exec.js';
import { AppError } from '../../shared/errors.js';
import { applyPlan, BACKUP_DIR, BACKUP_SECRETS_FILE, COMMAND_LINK as LINK, plannedDirs, serviceIds, SETTINGS_FILE, UNIT_DIR } from './ownership-plan.js';
import { renderUnits, UNITS } from './unit-plan.js';
import { migrateOldSettings } from './settings-migration.js';
import { compareVersions } from '../updates/index.js';
import type { InstallSwitches } from './unit-plan.js';
import type { WiringReport } from './wiring/index.js';

/**
 * `mailsvc install` / `uninstall`. With `root` = '/' it acts on the host
 * (root only): user, directories, release, settings file, units, systemctl,
 * migrations. With another root it renders the same files under that
 * directory and runs nothing (for inspection and the tests). Every step is
 * idempotent: re-running re-renders the units (the spec's way to change
 * ONCALENDAR) and keeps the settings file an administrator edited.
 */
export type InstallReport = { root: string; done: string[]; skipped: string[]; left: string[]; /** The mail daemons, each wired, already wired, not installed or left alone (host mode). */ wiring?: WiringReport };

export type InstallInput = {
  root: string;
  switches: InstallSwitches;
  /** The package this command runs from, and its version. */
  packageRoot: string;
  /** `checkout`: sources, not a release; nothing is copied into releases/. */
  layout: 'checkout' | 'installed';
  version: string;
  templateDir: string;
  /** Applies the schema migrations as the service user (host mode only). */
  migrate(): Promise<string>;
  /**
   * Waits until the restarted service answers and has made its key file
   * (host mode only): a `mailsvc admin set-password` typed right after the
   * install needs that key. null: it answered; otherwise what to look at.
   */
  waitForService?(): Promise<string | null>;
  /**
   * The user the service runs as (default mailsvc; on the host it must be
   * mailsvc, the name the units carry). With --root the ownership plan is
   * applied for it when it exists and this runs as root.
   */
  serviceUser?: string;
  /** Wires the installed mail daemons to mailsvc (host mode; wiring/index.ts), before the service restarts with the settings it wrote. */
  wire?(): Promise<WiringReport>;
  /**
   * After the wiring: `mailsvc limits apply` (the limits in force rendered into
   * the daemons that were wired, through the helper). null: applied; otherwise
   * what is left for the administrator.
   */
  applyLimits?(): Promise<string | null>;
};

const SERVICE_USER = 'mailsvc';
function settingsFile(s: InstallSwitches): string {
  return [
    '# mailsvc settings (KEY=VALUE; the environment wins). Written once by mailsvc install, never overwritten.',
    '# Every key: README.md, Configuration. Re-run mailsvc install after changing a MAILSVC_ENABLE_* switch or ONCALENDAR.',
    'MAILSVC_DATA_DIR=/var/lib/mailsvc',
    `MAILSVC_INSTALL_ROOT=${s.installRoot}`,
    'MAILSVC_API_HOST=127.0.0.1',
    'MAILSVC_API_PORT=8080',
    '# MAILSVC_DATABASE_URL=postgres://mailsvc@127.0.0.1/mailsvc',
    '# MAILSVC_TRUSTED_PROXIES=127.0.0.1',
    'MAILSVC_UPDATE_CHANNEL=stable',
    `MAILSVC_ENABLE_AUTO_UPDATES=${s.enableAutoUpdates ? 'yes' : 'no'}`,
    `MAILSVC_ENABLE_SRS=${s.enableSrs ? 'yes' : 'no'}`,
    `MAILSVC_ENABLE_DELIVERABILITY_TIMER=${s.enableDeliverability ? 'yes' : 'no'}`,
    `MAILSVC_BACKUP_ONCALENDAR=${s.backupCalendars.join(';')}`,
    '# The web panel at https://<host>/panel/ (through nginx; the second factor is required): no switches it off.',
    'MAILSVC_ENABLE_WEB_PANEL=yes',
    '',
  ].join('\n');
}

/**
 * `systemctl disable --now` waits for each unit to stop: the service's graceful shutdown, a timer's run in
 * progress. exec's default of 10 s cut uninstall off on a real host; systemd's own stop timeout is 90 s.
 */
const STOP_TIMEOUT_MS = 180_000;
const sh = async (file: string, args: string[]): Promise<void> => void (await exec(file, args, { timeoutMs: 120_000 }));

export async function install(input: InstallInput): Promise<InstallReport> {
  const host = input.root === '/';
  if (host && process.getuid?.() !== 0) throw new AppError('forbidden', 'mailsvc install must run as root (or render into a directory with --root DIR)');
  const at = (p: string): string => (host ? p : join(input.root, p));
  const r: InstallReport = { root: input.root, done: [], skipped: [], left: [] };
  const s = input.switches;

  const user = input.serviceUser ?? SERVICE_USER;
  if (host && user !== SERVICE_USER) throw new AppError('bad_request', `on the host the service user is ${SERVICE_USER} (the units name it): --service-user is for --root renders`);
  if (host) {
    const known = await exec('getent', ['passwd', user], { okCodes: [0, 2] });
    if (known.code === 0) r.done.push(`user ${user} exists`);
    else {
      await sh('useradd', ['--system', '--home-dir', '/var/lib/mailsvc', '--shell', '/usr/sbin/nologin', '--user-group', user]);
      r.done.push(`created the system user ${user}`);
    }
  } else r.skipped.push(`user ${user} (not with --root)`);

  const dirs = plannedDirs(s.installRoot);
  for (const d of dirs) mkdirSync(at(d.path), { recursive: true }); // modes and owners: the plan, below
  r.done.push(`directories ${dirs.map((d) => d.path).join(', ')}`);

  // The release: releases/<version> and `current`, unless this program already runs from there.
  const release = join(s.installRoot, 'releases', input.version);
  if (input.layout === 'checkout') {
    r.skipped.push('copying the release and the current link (this runs from a checkout: unpack a release archive and run its bin mailsvc install)');
  } else if (!existsSync(at(release))) {
    // A copy owned by whoever copies (root), not by the files' owner: ownership and modes are set by the plan below.
    await sh('cp', ['-R', '--preserve=timestamps', input.packageRoot, at(release)]);
    r.done.push(`copied this release to ${release}`);
  }
  const current = at(join(s.installRoot, 'current'));
  if (input.layout === 'checkout') {
    // nothing to point at
  } else if (!existsSync(current)) {
    symlinkSync(join('releases', input.version), current);
    r.done.push(`${join(s.installRoot, 'current')} → releases/${input.version}`);
  } else r.done.push(switchCurrent(current, input.version, join(s.installRoot, 'current')));
  mkdirSync(dirname(at(LINK)), { recursive: true });
  rmSync(at(LINK), { force: true });
  // The release's launcher (its own Node.js); a release from before the bundled runtime has only the bundle.
  const command = existsSync(join(current, 'bin', 'mailsvc')) || input.layout === 'checkout' ? join('bin', 'mailsvc') : join('dist', 'bundle', 'mailsvc.js');
  symlinkSync(join(s.installRoot, 'current', command), at(LINK));
  r.done.push(`${LINK} → ${s.installRoot}/current/${command}`);

  if (existsSync(at(SETTINGS_FILE))) r.done.push(`kept the settings file ${SETTINGS_FILE}`);
  else {
    writeFileSync(at(SETTINGS_FILE), settingsFile(s), { mode: 0o640 });
    r.done.push(`wrote the settings file ${SETTINGS_FILE}`);
  }
  // Before the units are rendered again: an older host's mailsvc.env, helper.env and unit Environment= lines.
  const moved = migrateOldSettings(at);
  r.done.push(...moved.done);
  r.left.push(...moved.left);

  const postdropGroup = groupExists(at('/etc/group'), 'postdrop');
  // The units of the release that runs: a newer `current` this older package kept has its own.
  const currentUnits = join(current, 'deploy', 'systemd');
  const runsOther = input.layout === 'installed' && existsSync(currentUnits) && realpathSync(current) !== realpathSync(at(release));
  const units = renderUnits(runsOther ? currentUnits : input.templateDir, s, { postdropGroup });
  if (host && !postdropGroup) r.left.push('the API cannot read the Postfix queue yet (no group postdrop: Postfix is not installed): install Postfix, then run mailsvc install again');
  mkdirSync(at(UNIT_DIR), { recursive: true });
  for (const u of units) {
    const path = at(join(UNIT_DIR, u.name));
    // A timer switched off is removed, with its service, so that nothing starts it.
    const off = u.name.endsWith('.timer') && !u.enable;
    if (off) {
      if (host && existsSync(path)) await exec('systemctl', ['disable', '--now', u.name], { okCodes: [0, 1, 5], timeoutMs: STOP_TIMEOUT_MS });
      rmSync(path, { force: true });
      rmSync(at(join(UNIT_DIR, u.name.replace(/\.timer$/, '.service'))), { force: true });
      continue;
    }
    const isTimerService = units.some((t) => t.name === u.name.replace(/\.service$/, '.timer') && !t.enable);
    if (isTimerService) continue;
    writeFileSync(path, u.text, { mode: 0o644 });
  }
  const enabled = units.filter((u) => u.enable).map((u) => u.name);
  // Owners and modes (docs/security.md, Privilege map): code, units and settings root's, data the service's.
  const ids = process.getuid?.() === 0 ? await serviceIds(user) : null;
  if (host && !ids) throw new AppError('unavailable', `the user ${user} does not exist`);
  const applied = await applyPlan(at, s.installRoot, ids, units.map((u) => u.name));
  if (ids) r.done.push(`owners and modes set (service user ${user}): ${applied.join(', ')}`);
  else r.skipped.push(`owners (no user ${user}, or not root): only the modes of ${applied.join(', ')} were set`);
  r.done.push(`rendered ${units.filter((u) => existsSync(at(join(UNIT_DIR, u.name)))).length} units into ${UNIT_DIR} (enabled: ${enabled.join(', ')})`);

  if (host) {
    await sh('systemctl', ['daemon-reload']);
    await sh('systemctl', ['enable', '--now', 'mailsvc-helper.socket']);
    r.done.push(`migrations: ${await input.migrate()}`);
    if (input.wire) r.wiring = await input.wire();
    if (input.applyLimits && r.wiring?.daemons.some((d) => d.status === 'wired' || d.status === 'already wired')) {
      const left = await input.applyLimits();
      if (left) r.left.push(left);
      else r.done.push('limits applied to the wired daemons (mailsvc limits apply)');
    }
    await sh('systemctl', ['enable', ...enabled.filter((n) => n !== 'mailsvc-helper.socket')]);
    await sh('systemctl', ['restart', ...units.filter((u) => u.start && u.name.endsWith('.timer')).map((u) => u.name)]);
    await sh('systemctl', ['restart', 'mailsvc.service']);
    r.done.push('systemctl daemon-reload; enabled and started the helper socket, the service and the timers');
    const notUp = input.waitForService ? await input.waitForService() : null;
    if (notUp) r.left.push(notUp);
    else if (input.waitForService) r.done.push('the service answers');
  } else r.skipped.push('systemctl and migrations (not with --root)');

  r.left.push(
    `set the administrator password: mailsvc admin set-password (writes MAILSVC_ADMIN_PASSWORD_HASH into ${SETTINGS_FILE})`,
    ...(r.wiring ? [] : ['put nginx in front: deploy/nginx/mailsvc.conf into /etc/nginx/sites-enabled/, with your certificate; nginx -t && systemctl reload nginx', 'connect Postfix and Dovecot: deploy/postfix/README.md, deploy/dovecot/README.md']),
    `every setting, the privileged helper's daemon paths too (if not the Debian defaults), goes into ${SETTINGS_FILE}; off-site backup remotes (RCLONE_CONFIG_*) into ${BACKUP_SECRETS_FILE} (root:root 0600)`,
  );
  return host ? r : underRoot(r, input.root);
}

/**
 * With --root DIR, what was done and skipped names the paths as written,
 * under DIR (the host paths alone read as if / had changed). A link's target
 * (after →) is the text inside the link, kept as it is.
 */
export function underRoot(r: InstallReport, root: string): InstallReport {
  const prefix = (line: string): string =>
    line
      .split(' → ')
      .map((part, i) => (i > 0 ? part : part.replace(/(^|[\s(,])(\/[^\s,)]*)/g, (_m, before: string, path: string) => `${before}${join(root, path)}`)))
      .join(' → ');
  return { ...r, done: r.done.map(prefix), skipped: r.skipped.map(prefix) };
}

export async function uninstall(root: string, installRoot: string): Promise<InstallReport> {
  const host = root === '/';
  if (host && process.getuid?.() !== 0) throw new AppError('forbidden', 'mailsvc uninstall must run as root (or --root DIR)');
  const at = (p: string): string => (host ? p : join(root, p));
  const r: InstallReport = { root, done: [], skipped: [], left: [] };
  const present = UNITS.map((u) => u.name).filter((n) => existsSync(at(join(UNIT_DIR, n))));
  if (host && present.length) {
    await exec('systemctl', ['disable', '--now', ...present.filter((n) => !n.includes('@'))], { okCodes: [0, 1, 5], timeoutMs: STOP_TIMEOUT_MS });
  }
  for (const n of present) rmSync(at(join(UNIT_DIR, n)), { force: true });
  if (host) await sh('systemctl', ['daemon-reload']);
  r.done.push(present.length ? `stopped, disabled and removed ${present.join(', ')}` : 'no mailsvc units were installed');
  try {
    if (lstatSync(at(LINK)).isSymbolicLink()) {
      rmSync(at(LINK));
      r.done.push(`removed ${LINK}`);
    }
  } catch {
    // not there: nothing to remove
  }
  if (existsSync(at(installRoot))) {
    rmSync(at(installRoot), { recursive: true, force: true });
    r.done.push(`removed the releases and the update snapshots in ${installRoot}`);
  }
  r.left.push(
    `kept the data: /var/lib/mailsvc (database, keys), ${BACKUP_DIR}, /var/log/mailsvc, the settings in /etc/mailsvc`,
    'kept the user mailsvc (its data and logs belong to it): userdel mailsvc when nothing is left',
  );
  return host ? r : underRoot(r, root);
}

/**
 * An existing `current` (`at` is its path on this root, `shown` the host path): switched to this release when this
 * one is newer (a newer .deb, or a newer archive's install), kept when it is the same or newer (never a downgrade).
 */
function switchCurrent(at: string, version: string, shown: string): string {
  const target = readlinkSync(at);
  const running = basename(target);
  let order: number;
  try {
    order = compareVersions(version, running);
  } catch {
    return `${shown} kept (→ ${target}: not a release version this one can compare with ${version})`;
  }
  if (order <= 0) {
    return order === 0 ? `${shown} kept (→ ${target})` : `${shown} kept (→ ${target}): ${running} is newer than this release ${version}, nothing was downgraded (an older release is installed with the update channel's rollback, not by install)`;
  }
  const next = `${at}.new-${process.pid}`;
  rmSync(next, { force: true });
  symlinkSync(join('releases', version), next);
  renameSync(next, at);
  return `${shown} → releases/${version} (was ${target}: ${version} is newer)`;
}

/** Whether `name` is a group in the group file at `path` (the target's /etc/group; a missing file: no). */
function groupExists(path: string, name: string): boolean {
  try {
    return readFileSync(path, 'utf8').split('\n').some((l) => l.startsWith(`${name}:`));
  } catch {
    return false;
  }
}
