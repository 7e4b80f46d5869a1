/**
 * Issue 19, finding 2: nothing root executes or reads as configuration is
 * writable by the service user. `mailsvc install --root DIR --service-user
 * nobody` runs as the real CLI of a staged release (the `installed` layout,
 * so the release is copied into DIR/opt/mailsvc/releases/), from a release
 * the old updater left owned by the service user. Then every unit systemd
 * runs as root is walked: its program (following the links into the whole
 * release `current` names), its EnvironmentFile=s, the unit file, the command
 * link, the settings, the backups' root-only secrets and the backup directory; as
 * `nobody` (setpriv, with the group the plan gives the service user) none of
 * them, nor a directory above them up to DIR, may be writable. And no unit
 * running as the service user may have a ReadWritePaths= over code root runs.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stageRelease } from '../../../test/helpers/releases.js';
import { skipNotice } from '../../../test/helpers/services.js';

const NOBODY = 65534;
const has = (cmd: string, args: string[]): boolean => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
const canRun = process.getuid?.() === 0 && has('setpriv', ['--version']) && has('getent', ['passwd', 'nobody']);
if (!canRun) skipNotice('root, setpriv and the user nobody', 'needed to install for an unprivileged service user and check what it can write');

// The host's paths (docs/security.md, Privilege map); spelled out here, not imported, so the test reads the render alone.
const INSTALL_ROOT = '/opt/mailsvc';
const UNIT_DIR = '/etc/systemd/system';
const COMMAND_LINK = '/usr/local/bin/mailsvc';
const SETTINGS_FILE = '/etc/mailsvc/mailsvc.conf';
const BACKUP_SECRETS = '/etc/mailsvc/backup-secrets.conf';
const BACKUP_DIR = '/var/backups/mailsvc';
const VERSION = '7.7.7';

type Unit = { name: string; text: string; user: string | null; values: (key: string) => string[] };
function readUnit(dir: string, name: string): Unit {
  const text = readFileSync(join(dir, name), 'utf8');
  const values = (key: string): string[] => text.split('\n').filter((l) => l.startsWith(`${key}=`)).map((l) => l.slice(key.length + 1).trim());
  return { name, text, user: values('User').at(-1) ?? null, values };
}
const runsAsRoot = (u: Unit): boolean => u.name.endsWith('.service') && (u.user === null || u.user === 'root' || u.user === '0');

describe.skipIf(!canRun)('privilege map after mailsvc install --root DIR --service-user nobody', () => {
  let tmp: string;
  let dir: string;
  let nobodyGid: number;
  let units: Unit[];
  let report: { done: string[]; skipped: string[] };

  /** A host path as it lies in DIR. */
  const inDir = (p: string): string => join(dir, p);
  /** A path in DIR back as the host's. */
  const onHost = (p: string): string => `/${relative(dir, p)}`;

  /**
   * Follows `hostPath` inside DIR component by component: every link met and
   * the final target are returned (as paths in DIR), links resolved in DIR.
   */
  function follow(hostPath: string): string[] {
    const seen: string[] = [];
    let parts = hostPath.split('/').filter(Boolean);
    let at = dir;
    for (let hops = 0; parts.length > 0 && hops < 40; ) {
      const next = join(at, parts[0] ?? '');
      parts = parts.slice(1);
      seen.push(next);
      let st;
      try {
        st = lstatSync(next);
      } catch {
        return seen; // does not exist in DIR: nothing further to check
      }
      if (!st.isSymbolicLink()) {
        at = next;
        continue;
      }
      hops++;
      const target = readlinkSync(next);
      const rest = target.split('/').filter(Boolean);
      if (isAbsolute(target)) at = dir;
      parts = [...rest, ...parts];
    }
    return seen;
  }

  /** Every entry under a directory (the directory included), links not followed. */
  function tree(root: string): string[] {
    const out = [root];
    for (const e of readdirSync(root, { withFileTypes: true })) {
      const p = join(root, e.name);
      if (e.isDirectory()) out.push(...tree(p));
      else out.push(p);
    }
    return out;
  }

  /** What root executes or reads as configuration (paths in DIR), with every directory above them up to DIR. */
  function rootReads(): { paths: string[]; executed: string[] } {
    const paths = new Set<string>();
    const executed = new Set<string>();
    const releases = inDir(join(INSTALL_ROOT, 'releases'));
    const add = (p: string): void => {
      paths.add(p);
      // A path inside a release stands for the whole release: any file in it may be loaded.
      const rel = relative(releases, p);
      if (!rel.startsWith('..') && rel !== '' && !isAbsolute(rel)) {
        const release = join(releases, rel.split('/')[0] ?? '');
        if (!executed.has(release) && statSync(release).isDirectory()) {
          executed.add(release);
          for (const q of tree(release)) paths.add(q);
        }
      }
    };
    for (const u of units) {
      // systemd (root) reads every unit file as configuration.
      add(inDir(join(UNIT_DIR, u.name)));
      if (!runsAsRoot(u)) continue;
      for (const exec of u.values('ExecStart')) {
        const program = exec.replace(/^[-@+!:]+/, '').split(/\s+/)[0] ?? '';
        expect(isAbsolute(program), `${u.name}: ${exec}`).toBe(true);
        for (const p of follow(program)) {
          add(p);
          executed.add(p);
        }
      }
      for (const env of u.values('EnvironmentFile')) for (const p of follow(env.replace(/^-/, ''))) add(p);
    }
    for (const p of [COMMAND_LINK, SETTINGS_FILE, BACKUP_SECRETS, BACKUP_DIR, join(INSTALL_ROOT, 'current')]) for (const q of follow(p)) add(q);
    for (const p of [...paths]) for (let d = dirname(p); d.startsWith(dir); d = dirname(d)) paths.add(d);
    return { paths: [...paths].sort(), executed: [...executed].sort() };
  }

  /** The paths of `list` that `nobody`, in the service user's group, may write (access(2), as `test -w` asks). */
  function writableByService(list: string[], test = '-w'): string[] {
    const r = spawnSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, `--groups=${nobodyGid}`, 'sh', '-c', `while IFS= read -r p; do [ ${test} "$p" ] && printf '%s\\n' "$p"; done; exit 0`], {
      input: `${list.join('\n')}\n`,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
      timeout: 120_000,
    });
    expect(r.status, r.stderr).toBe(0);
    return r.stdout.split('\n').filter(Boolean);
  }

  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), 'mailsvc-privmap-'));
    chmodSync(tmp, 0o755); // nobody must reach the tree, or every "not writable" would be vacuous
    nobodyGid = Number(execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' }).trim());
    const { privateKey } = generateKeyPairSync('ed25519');
    const key = join(tmp, 'release-key.pem');
    writeFileSync(key, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    // The release as the old updater (running as the service user) left it: the service user's files.
    const staged = stageRelease(join(tmp, `mailsvc-${VERSION}`), VERSION, key);
    execFileSync('chown', ['-R', `${NOBODY}:${nobodyGid}`, staged]);
    execFileSync('chmod', ['-R', 'g+w', staged]);
    dir = join(tmp, 'root');
    mkdirSync(join(dir, 'etc/mailsvc'), { recursive: true });
    // The backups' root-only secrets, written by an administrator before the install (the installer does not make them).
    writeFileSync(join(dir, BACKUP_SECRETS), 'RCLONE_CONFIG_OFFSITE_TYPE=sftp\n', { mode: 0o644 });
    const r = spawnSync(process.execPath, [join(staged, 'dist/bundle/mailsvc.js'), 'install', '--root', dir, '--service-user', 'nobody', '--json'], {
      cwd: tmp,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        MAILSVC_DATA_DIR: join(tmp, 'data'),
        MAILSVC_CONFIG_FILE: join(tmp, 'data/mailsvc.conf'),
        MAILSVC_INSTALL_ROOT: INSTALL_ROOT,
        MAILSVC_ENABLE_SRS: 'yes',
        MAILSVC_ENABLE_DELIVERABILITY_TIMER: 'yes',
        MAILSVC_ENABLE_AUTO_UPDATES: 'yes',
      },
      encoding: 'utf8',
      timeout: 300_000,
    });
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(0);
    report = JSON.parse(r.stdout) as typeof report;
    const unitDir = inDir(UNIT_DIR);
    units = readdirSync(unitDir).map((n) => readUnit(unitDir, n));
  }, 600_000);

  afterAll(() => {
    // A whole installed release (node_modules included): removing it took over a minute on a loaded machine, and
    // nothing waits for it, so rm runs on its own after the file ends.
    if (tmp) spawn('rm', ['-rf', tmp], { detached: true, stdio: 'ignore' }).unref();
  });

  it('copied the release and applied the ownership plan for the service user', () => {
    expect(report.done.join("\n")).toContain(`copied this release to ${inDir(join(INSTALL_ROOT, "releases", VERSION))}`);
    expect(report.done.join('\n')).toMatch(/owners and modes set \(service user nobody\)/);
    expect(readlinkSync(inDir(join(INSTALL_ROOT, 'current')))).toBe(`releases/${VERSION}`);
    const mode = (p: string): { uid: number; gid: number; mode: number } => {
      const s = lstatSync(inDir(p));
      return { uid: s.uid, gid: s.gid, mode: s.mode & 0o7777 };
    };
    expect(mode(join(INSTALL_ROOT, 'releases', VERSION, 'dist/bundle/mailsvc.js'))).toMatchObject({ uid: 0, gid: 0 });
    expect(mode('/etc/mailsvc')).toEqual({ uid: 0, gid: nobodyGid, mode: 0o750 });
    expect(mode(SETTINGS_FILE)).toEqual({ uid: 0, gid: nobodyGid, mode: 0o640 });
    expect(mode(BACKUP_SECRETS)).toEqual({ uid: 0, gid: 0, mode: 0o600 });
    expect(mode(BACKUP_DIR)).toEqual({ uid: 0, gid: nobodyGid, mode: 0o750 });
    expect(mode(join(INSTALL_ROOT, 'snapshots'))).toEqual({ uid: 0, gid: 0, mode: 0o700 });
    expect(mode('/var/lib/mailsvc')).toEqual({ uid: NOBODY, gid: nobodyGid, mode: 0o2770 });
    expect(mode(COMMAND_LINK).uid).toBe(0);
  });

  it('nothing a root unit executes or reads as configuration, nor a directory above it, is writable by the service user', () => {
    // The helper and the backups at least: the walk is not empty.
    expect(units.filter(runsAsRoot).map((u) => u.name)).toEqual(expect.arrayContaining(['mailsvc-helper.service', 'mailsvc-backup.service']));
    const { paths, executed } = rootReads();
    const bundle = inDir(join(INSTALL_ROOT, 'releases', VERSION, 'dist/bundle/mailsvc.js'));
    expect(paths).toContain(bundle);
    // The helper loads its compiled SO_PEERCRED addon from the release: code root runs, walked with the rest.
    expect(paths).toContain(inDir(join(INSTALL_ROOT, 'releases', VERSION, 'native/peercred/build/Release/peercred.node')));
    expect(paths).toContain(inDir(SETTINGS_FILE));
    expect(executed).toContain(inDir(join(INSTALL_ROOT, 'releases', VERSION)));
    expect(paths.length).toBeGreaterThan(100);
    // Not vacuous: the service user reaches and reads the code.
    expect(writableByService([bundle], '-r')).toEqual([bundle]);
    // The backups' secrets are root's alone: the service user cannot even read them.
    expect(writableByService([inDir(BACKUP_SECRETS)], '-r')).toEqual([]);
    // No root unit takes settings from anywhere but the files above: no EnvironmentFile=, no MAILSVC_* in the unit.
    for (const u of units) expect(u.text, u.name).not.toMatch(/^EnvironmentFile=|^Environment=.*MAILSVC_/m);
    expect(writableByService(paths).map(onHost)).toEqual([]);
    // And the same check does see what the service user may write: its own data directory.
    expect(writableByService([inDir('/var/lib/mailsvc')])).toEqual([inDir('/var/lib/mailsvc')]);
    // The update job writes the releases: it is a root unit, walked above (docs/security.md).
    expect(units.filter(runsAsRoot).map((u) => u.name)).toContain('mailsvc-update@.service');
  }, 300_000);

  it('no unit running as the service user has a ReadWritePaths= over code a root unit runs', () => {
    const { executed } = rootReads();
    const code = executed.map(onHost);
    const overlaps: string[] = [];
    for (const u of units.filter((x) => x.name.endsWith('.service') && !runsAsRoot(x))) {
      for (const line of u.values('ReadWritePaths')) {
        for (const rw of line.split(/\s+/).filter(Boolean).map((p) => resolve(p.replace(/^-/, '')))) {
          for (const c of code) if (c === rw || c.startsWith(`${rw}/`)) overlaps.push(`${u.name}: ReadWritePaths=${rw} covers ${c}`);
        }
      }
    }
    expect(code).toContain(join(INSTALL_ROOT, 'releases', VERSION));
    expect(overlaps).toEqual([]);
  });

  it('the render holds the units it walks (every root unit exists on disk)', () => {
    for (const u of units) expect(existsSync(inDir(join(UNIT_DIR, u.name)))).toBe(true);
  });
});
