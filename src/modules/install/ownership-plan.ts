import { chmodSync, existsSync, lchownSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { exec } from '../../adapters/exec.js';
import { lockDownTree } from '../updates/index.js';

/**
 * Who owns what after `mailsvc install` (docs/security.md, Privilege map).
 * The rule: nothing root executes or reads as configuration is writable by
 * the service user. Code (the releases, `current`, the command link), the
 * units and the settings are root's; the service user gets its data and logs
 * only, and may read (by group) the settings file and the backups.
 */
export type Role = 'root' | 'service';
export type PlanEntry = {
  path: string;
  /** dir, file or link: that one path; tree: a directory and everything in it (dirs 0755, files 0644/0755). */
  kind: 'dir' | 'file' | 'link' | 'tree';
  owner: Role;
  group: Role;
  /** For dir and file; a tree's modes are fixed (u=rwX,go=rX), a link has none. */
  mode?: number;
  /** Left alone when it does not exist (the installer does not make it). */
  optional?: boolean;
};

export const SETTINGS_FILE = '/etc/mailsvc/mailsvc.conf';
/** Root's alone (root:root 0600): the off-site remotes' definitions and credentials, the backup encryption key. */
export const BACKUP_SECRETS_FILE = '/etc/mailsvc/backup-secrets.conf';
/** Settings files of older releases: `mailsvc install` moves what they hold into SETTINGS_FILE (settings-migration.ts). */
export const OLD_SERVICE_ENV = '/etc/mailsvc/mailsvc.env';
export const OLD_HELPER_ENV = '/etc/mailsvc/helper.env';
export const COMMAND_LINK = '/usr/local/bin/mailsvc';
export const UNIT_DIR = '/etc/systemd/system';
export const BACKUP_DIR = '/var/backups/mailsvc';

/** The update snapshots (database dumps taken before an update's migrations): root's, beside the releases. */
export const snapshotsDir = (installRoot: string): string => join(installRoot, 'snapshots');

/** The plan, in the order it is applied (a directory before what is in it). */
export function ownershipPlan(installRoot: string): PlanEntry[] {
  return [
    { path: '/etc/mailsvc', kind: 'dir', owner: 'root', group: 'service', mode: 0o750 },
    { path: SETTINGS_FILE, kind: 'file', owner: 'root', group: 'service', mode: 0o640 },
    { path: BACKUP_SECRETS_FILE, kind: 'file', owner: 'root', group: 'root', mode: 0o600, optional: true },
    { path: '/var/lib/mailsvc', kind: 'dir', owner: 'service', group: 'service', mode: 0o2770 },
    { path: '/var/log/mailsvc', kind: 'dir', owner: 'service', group: 'service', mode: 0o750 },
    // Root writes the backups; the service only reads them (GET /admin/backups).
    { path: BACKUP_DIR, kind: 'dir', owner: 'root', group: 'service', mode: 0o750 },
    { path: installRoot, kind: 'dir', owner: 'root', group: 'root', mode: 0o755 },
    { path: join(installRoot, 'releases'), kind: 'dir', owner: 'root', group: 'root', mode: 0o755 },
    { path: snapshotsDir(installRoot), kind: 'dir', owner: 'root', group: 'root', mode: 0o700 },
    { path: join(installRoot, 'current'), kind: 'link', owner: 'root', group: 'root', optional: true },
    { path: COMMAND_LINK, kind: 'link', owner: 'root', group: 'root', optional: true },
    { path: UNIT_DIR, kind: 'dir', owner: 'root', group: 'root', mode: 0o755 },
  ];
}

/** The directories the installer makes (the plan's `dir` entries). */
export const plannedDirs = (installRoot: string): PlanEntry[] => ownershipPlan(installRoot).filter((e) => e.kind === 'dir');

/** The service user's uid and primary gid, or null when there is no such user. */
export async function serviceIds(name: string): Promise<{ uid: number; gid: number } | null> {
  if (!/^[a-z_][a-z0-9_-]*\$?$/i.test(name)) return null;
  const r = await exec('getent', ['passwd', name], { okCodes: [0, 2] });
  const f = r.stdout.trim().split(':');
  if (r.code !== 0 || f.length < 4) return null;
  return { uid: Number(f[2]), gid: Number(f[3]) };
}

/**
 * Applies the plan under `at` (the host's `/`, or the --root directory), plus
 * every release under releases/ as a tree and each unit file. With `ids`
 * null (no service user: a --root render for inspection) only the modes are
 * set. Links are chowned themselves (never followed).
 */
export async function applyPlan(at: (p: string) => string, installRoot: string, ids: { uid: number; gid: number } | null, unitNames: readonly string[]): Promise<string[]> {
  const applied: string[] = [];
  const id = (r: Role, which: 'uid' | 'gid'): number => (r === 'root' || !ids ? 0 : ids[which]);
  const entries: PlanEntry[] = [
    ...ownershipPlan(installRoot),
    ...unitNames.map((n): PlanEntry => ({ path: join(UNIT_DIR, n), kind: 'file', owner: 'root', group: 'root', mode: 0o644, optional: true })),
  ];
  for (const e of entries) {
    const p = at(e.path);
    let st;
    try {
      st = lstatSync(p);
    } catch {
      if (!e.optional) throw new Error(`${e.path} is missing`);
      continue;
    }
    // A link where a directory or file belongs would make root chown or chmod its target.
    if (st.isSymbolicLink() !== (e.kind === 'link')) throw new Error(`${e.path} is ${st.isSymbolicLink() ? 'a symbolic link' : 'not a symbolic link'}: refusing to set its owner`);
    if (ids) lchownSync(p, id(e.owner, 'uid'), id(e.group, 'gid'));
    if (e.mode !== undefined) chmodSync(p, e.mode);
    applied.push(e.path);
  }
  const releases = at(join(installRoot, 'releases'));
  if (existsSync(releases)) {
    for (const name of readdirSync(releases)) {
      await lockDownTree(join(releases, name), ids !== null);
      applied.push(join(installRoot, 'releases', name));
    }
  }
  return applied;
}
