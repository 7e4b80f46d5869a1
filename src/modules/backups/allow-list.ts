import { existsSync, lstatSync, readFileSync, readlinkSync } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';
import type { TarMember } from '../../adapters/tar/index.js';
import { restoreAllowList } from '../../config/backup-settings.js';
import type { RestoreRoot } from '../../config/backup-settings.js';
import type { Settings } from '../../config/settings.js';
import { AppError } from '../../shared/errors.js';
import { keyFilePath } from '../../shared/secret-key-file.js';

/** One member of config.tar as a restore would write it: where, and with which checked mode and owner. */
export type PlanEntry = { member: string; target: string; mode: number; uid: number; gid: number; daemonDir: string | null };
export type ConfigPlan = { dirs: PlanEntry[]; files: PlanEntry[]; links: (PlanEntry & { to: string })[] };
/** Where the backup host kept its settings file and key file (the manifest says; older ones: the first two config paths). */
export type RecordedPaths = { settingsFile: string | undefined; keyFile: string | undefined };

const within = (path: string, dir: string): boolean => path === dir || path.startsWith(dir === '/' ? dir : dir + sep);
const printable = (s: string): string => JSON.stringify(s.length > 120 ? `${s.slice(0, 120)}…` : s);

function gidOf(group: string): number | null {
  if (/^\d+$/.test(group)) return Number(group);
  const line = (existsSync('/etc/group') ? readFileSync('/etc/group', 'utf8') : '').split('\n').find((l) => l.split(':')[0] === group);
  const gid = Number(line?.split(':')[2]);
  return Number.isInteger(gid) ? gid : null;
}

function linkAt(path: string): string | null {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}

function owner(path: string): { uid: number; gid: number } | null {
  try {
    const st = lstatSync(path);
    return { uid: st.uid, gid: st.gid };
  } catch {
    return null;
  }
}

/**
 * Judges every member of config.tar (from its listing, before anything is
 * extracted) against the restore allow-list: the settings file and the key
 * file (put at THIS host's MAILSVC_CONFIG_FILE and data directory), and
 * regular files, directories and links that stay inside the daemon
 * directories mailsvc renders. Refused, for the whole restore: any other
 * path, an absolute or `..` name, setuid/setgid/sticky bits, devices, FIFOs,
 * hard links, a link leading out of its directory (unless that very link is
 * already in place: then nothing is written), an owner other than root
 * or the present file's owner, a group other than root's, the present
 * file's or the daemon's. Throws naming the first offending members.
 */
export function planConfigRestore(settings: Settings, members: TarMember[], recorded: RecordedPaths): ConfigPlan {
  const roots: RestoreRoot[] = restoreAllowList(settings.helper);
  const plan: ConfigPlan = { dirs: [], files: [], links: [] };
  const problems: string[] = [];
  for (const m of members) {
    const name = m.name.replace(/\/+$/, '');
    const bad = (why: string): void => void problems.push(`${printable(m.name)} ${why}`);
    if (name === '' || m.name.startsWith('/') || name.split('/').some((x) => x === '..' || x === '.' || x === '') || name.includes('\0')) {
      bad('has an absolute name or a "." or ".." in it');
      continue;
    }
    const recordedPath = `/${name}`;
    let target = recordedPath;
    let root: RestoreRoot | undefined;
    let groups: (number | null)[] = [];
    if (m.type === 'file' && (recordedPath === recorded.settingsFile || recordedPath === recorded.keyFile)) {
      target = recordedPath === recorded.settingsFile ? settings.configFile : keyFilePath(settings);
      // The service's own files: also the owner of the directory they go into (the data directory is the service user's).
      const dir = owner(dirname(target));
      groups = [gidOf('mailsvc'), dir?.gid ?? null];
      const here = owner(target);
      if (m.uid !== 0 && m.uid !== here?.uid && m.uid !== dir?.uid) bad(`is owned by uid ${m.uid}, neither root nor the owner of ${target} or its directory`);
    } else {
      root = roots.find((r) => (r.kind === 'dir' ? within(recordedPath, r.path) : recordedPath === r.path));
      if (!root) {
        bad(`lies outside what a restore writes (the settings file, the key file, ${roots.map((r) => r.path).join(', ')})`);
        continue;
      }
      groups = root.groups.map(gidOf);
      const here = owner(target);
      if (m.uid !== 0 && m.uid !== here?.uid) bad(`is owned by uid ${m.uid}, neither root nor the present file's owner`);
    }
    const here = owner(target);
    if (m.gid !== 0 && m.gid !== here?.gid && !groups.includes(m.gid)) bad(`has group ${m.gid}, neither root's, the present file's nor the daemon's`);
    if ((m.mode & 0o7000) !== 0) bad(`has setuid, setgid or sticky bits (mode ${(m.mode & 0o7777).toString(8).padStart(4, '0')})`);
    const entry: PlanEntry = { member: name, target, mode: m.mode & 0o777, uid: m.uid, gid: m.gid, daemonDir: root?.kind === 'dir' ? root.path : null };
    if (m.type === 'file') plan.files.push(entry);
    else if (m.type === 'dir' && root?.kind === 'dir') plan.dirs.push(entry);
    else if (m.type === 'symlink' && root?.kind === 'dir') {
      const to = resolve(dirname(target), m.linkname);
      // A link leading out (Debian's /etc/postfix/makedefs.out → /usr/share/postfix) is never written; the same link already in place is left as it is.
      if (!within(to, root.path)) {
        if (linkAt(target) !== m.linkname) bad(`is a symbolic link to ${printable(m.linkname)}, outside ${root.path} (a restore writes no such link; one the daemon's package makes is accepted once it is in place: install the package first)`);
      } else plan.links.push({ ...entry, to: m.linkname });
    } else bad(m.type === 'hardlink' ? 'is a hard link' : m.type === 'char' || m.type === 'block' ? 'is a device' : m.type === 'fifo' ? 'is a FIFO' : m.type === 'dir' || m.type === 'symlink' ? `is a ${m.type === 'dir' ? 'directory' : 'link'} where only a file may be` : 'is not a regular file, directory or link');
  }
  if (problems.length > 0) {
    throw new AppError('validation', `refusing to restore, nothing was changed: config.tar holds ${problems.length} member(s) a restore never writes: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? '; …' : ''}`);
  }
  return plan;
}
