import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, chownSync, cpSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { join, relative } from 'node:path';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import { expectOk, json, runCli } from '../../../test/helpers/cli.js';
import { backupEnv, makeMailStorage } from '../../../test/helpers/backups.js';
import type { BackupEnv } from '../../../test/helpers/backups.js';
import { skipNotice } from '../../../test/helpers/services.js';

/**
 * Finding 4 of the privilege review: a backup planted or edited in LOCAL_DIR
 * must never be installed by root's `mailsvc restore`. Real tar, the real CLI,
 * as root; the daemon directories of the allow-list point into a temp root.
 */

type Host = BackupEnv & { pf: string; backup: string; id: string; drop(): Promise<void> };

/** Every entry under `root` but `skip`: type, mode, owner, content or link target. */
function snapshot(root: string, skip: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (skip.some((s) => p === s || p.startsWith(`${s}/`))) continue;
      const st = lstatSync(p);
      const what = st.isDirectory() ? 'dir' : st.isSymbolicLink() ? `link ${readlinkSync(p)}` : st.isFile() ? createHash('sha256').update(readFileSync(p)).digest('hex') : 'special';
      out[relative(root, p)] = `${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid} ${what}`;
      if (st.isDirectory()) walk(p);
    }
  };
  walk(root);
  return out;
}

/** The HMAC line mailsvc writes beside a manifest, made here with a key of the test's choosing. */
function sign(manifest: Buffer, key: Buffer): string {
  const id = createHash('sha256').update('mailsvc backup manifest key\n').update(key).digest('hex').slice(0, 16);
  return `hmac-sha256 ${id} ${createHmac('sha256', key).update(manifest).digest('hex')}\n`;
}

/** This host's manifest key (a code without manifest keys has none: any key will do, it checks none). */
const hostKey = (t: Host): Buffer => (existsSync(join(t.data, 'backup-manifest.key')) ? Buffer.from(readFileSync(join(t.data, 'backup-manifest.key'), 'utf8').trim(), 'base64') : randomBytes(32));

/**
 * A copy of the good backup under `<dir>/planted/<id>`, its config.tar with
 * `add` appended (paths under `stage`, archived by their absolute names as
 * mailsvc archives them) and its manifest re-hashed the way an attacker with
 * write access to the directory would; `sig` decides the manifest.hmac.
 */
function plant(t: Host, name: string, add: (stage: string) => string[], sig: 'none' | 'keep' | Buffer): string {
  const dir = join(t.dir, name, t.id);
  cpSync(t.backup, dir, { recursive: true });
  const stage = join(t.dir, `${name}-stage`);
  mkdirSync(stage);
  const members = add(stage);
  execFileSync('tar', ['--append', '--file', join(dir, 'config.tar'), '--numeric-owner', `--directory=${stage}`, ...members]);
  const m = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { artifacts: { name: string; size: number; sha256: string }[] };
  const conf = m.artifacts.find((a) => a.name === 'config.tar');
  if (!conf) throw new Error('the good backup has no config.tar');
  const tar = readFileSync(join(dir, 'config.tar'));
  conf.size = tar.length;
  conf.sha256 = createHash('sha256').update(tar).digest('hex');
  const bytes = Buffer.from(JSON.stringify(m, null, 2) + '\n');
  writeFileSync(join(dir, 'manifest.json'), bytes);
  if (sig === 'none') rmSync(join(dir, 'manifest.hmac'), { force: true });
  else if (sig !== 'keep') writeFileSync(join(dir, 'manifest.hmac'), sign(bytes, sig));
  return dir;
}

/** `path` (absolute, the live place) made inside `stage` by `make`; returns its member name. */
function at(stage: string, path: string, make: (p: string) => void): string {
  const p = join(stage, path);
  mkdirSync(join(p, '..'), { recursive: true });
  make(p);
  return path.replace(/^\/+/, '');
}

const root = process.getuid?.() === 0;
let t: Host;

describe('restore refuses planted, edited and hostile backups before writing anything (finding 4)', () => {
  beforeAll(async () => {
    if (!root) return;
    const db = await createTestDatabase('sqlite');
    const base = backupEnv(db.url);
    // Without /usr/sbin on its PATH the restore puts the daemon files back unchecked (no postfix check of the test's bare
    // Postfix directory): this test is about what a restore may write, the daemon checks have tests of their own.
    base.env.PATH = '/usr/local/bin:/usr/bin:/bin';
    const pf = join(base.dir, 'etc-postfix');
    expectOk(await base.cli(['db', 'migrate']));
    makeMailStorage(base.mail, 1, 3);
    const b = json(await base.cli(['backup', 'run', '--json', '--full']));
    t = { ...base, pf, backup: String(b.path), id: String(b.id), drop: () => db.drop() };
  }, 240_000);

  afterAll(async () => {
    if (!t) return;
    rmSync(t.dir, { recursive: true, force: true });
    await t.drop();
  });

  /** Runs a config restore of `dir` and asserts it was refused with `message`, nothing changed in the temp root. */
  async function refused(dir: string, message: RegExp, extra: string[] = []): Promise<string> {
    const skip = [join(t.dir, 'backups'), ...readdirSync(t.dir).filter((n) => n.startsWith('p-')).map((n) => join(t.dir, n))];
    const before = snapshot(t.dir, skip);
    const r = await t.cli(['restore', '--source', dir, '--restore-config', '--restore-files', ...extra]);
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(1);
    expect(snapshot(t.dir, skip)).toEqual(before);
    return r.stderr;
  }

  it('a planted backup (etc/cron.d/x in config.tar, manifest re-hashed) is refused before anything is extracted, also with --accept-unsigned', async () => {
    if (!root) return skipNotice('root', 'restoring as root');
    const cron = `/etc/cron.d/mailsvc-planted-${randomBytes(4).toString('hex')}`;
    const hadCronDir = existsSync('/etc/cron.d');
    try {
      const dir = plant(t, 'p-cron', (s) => [at(s, cron, (p) => writeFileSync(p, '# planted by a mailsvc test: never installed\n'))], 'none');
      await refused(dir, /unsigned manifest .*--accept-unsigned/);
      expect(existsSync(cron)).toBe(false);
      const loud = await refused(dir, /config\.tar holds 1 member\(s\) a restore never writes: "etc\/cron\.d\/mailsvc-planted-[0-9a-f]+" lies outside what a restore writes/, ['--accept-unsigned']);
      expect(loud).toMatch(/WARNING: --accept-unsigned: restoring from UNSIGNED manifest/);
      expect(existsSync(cron)).toBe(false);
    } finally {
      rmSync(cron, { force: true });
      if (!hadCronDir) rmSync('/etc/cron.d', { recursive: true, force: true });
    }
  }, 120_000);

  it('an edited manifest and a manifest signed with another key are refused; the good one restores, and on a fresh host with --manifest-key', async () => {
    if (!root) return skipNotice('root', 'restoring as root');
    // Edited: config.tar changed and re-hashed in the manifest, the old HMAC kept.
    const edited = plant(t, 'p-edited', (s) => [at(s, join(t.pf, 'extra.cf'), (p) => writeFileSync(p, 'x = 1\n'))], 'keep');
    await refused(edited, /the manifest of .* was changed after it was written \(its HMAC does not match\)/);
    expect(existsSync(join(t.pf, 'extra.cf'))).toBe(false);
    // Signed with a key that is not this host's.
    const other = plant(t, 'p-other', (s) => [at(s, join(t.pf, 'extra.cf'), (p) => writeFileSync(p, 'x = 1\n'))], randomBytes(32));
    await refused(other, /is signed with another key .*--manifest-key FILE/);
    expect(existsSync(join(t.pf, 'extra.cf'))).toBe(false);

    // The good one, signed with this host's key (a file the allow-list takes: inside the Postfix directory).
    const good = plant(t, 'p-good', (s) => [at(s, join(t.pf, 'extra.cf'), (p) => writeFileSync(p, 'x = 1\n', { mode: 0o644 }))], hostKey(t));
    expectOk(await t.cli(['restore', '--source', good, '--restore-config', '--restore-files']));
    expect(readFileSync(join(t.pf, 'extra.cf'), 'utf8')).toBe('x = 1\n');
    rmSync(join(t.pf, 'extra.cf'));

    // A fresh host: no manifest key. Refused without one; restored with the saved key, which is then installed.
    const saved = join(t.dir, 'saved.key');
    cpSync(join(t.data, 'backup-manifest.key'), saved);
    rmSync(join(t.data, 'backup-manifest.key'));
    try {
      await refused(t.backup, /this host has no backup manifest key .*--manifest-key FILE/);
      await refused(t.backup, /signed with another key/, ['--manifest-key', writeKey(join(t.dir, 'wrong.key'))]);
      const r = await t.cli(['restore', '--source', t.backup, '--restore-config', '--restore-files', '--manifest-key', saved, '--json']);
      expectOk(r);
      expect(JSON.stringify(json(r).steps)).toContain('the manifest key was installed');
      expect(readFileSync(join(t.data, 'backup-manifest.key'))).toEqual(readFileSync(saved));
      expect((lstatSync(join(t.data, 'backup-manifest.key')).mode & 0o777).toString(8)).toBe('600');
    } finally {
      if (!existsSync(join(t.data, 'backup-manifest.key'))) cpSync(saved, join(t.data, 'backup-manifest.key'));
    }
  }, 180_000);

  const hostile: [string, (s: string) => string[], RegExp][] = [
    ['a setuid file', (s) => [at(s, join(t.pf, 'suid'), (p) => { writeFileSync(p, '#!/bin/sh\n'); chmodSync(p, 0o4755); })], /"[^"]*etc-postfix\/suid" has setuid, setgid or sticky bits \(mode 4755\)/],
    ['a symlink to /etc/shadow', (s) => [at(s, join(t.pf, 'shadow'), (p) => symlinkSync('/etc/shadow', p))], /etc-postfix\/shadow" is a symbolic link to "\/etc\/shadow", outside /],
    ['a FIFO', (s) => [at(s, join(t.pf, 'fifo'), (p) => execFileSync('mkfifo', [p]))], /etc-postfix\/fifo" is a FIFO/],
    ['a device', (s) => [at(s, join(t.pf, 'null'), (p) => execFileSync('mknod', [p, 'c', '1', '3']))], /etc-postfix\/null" is a device/],
    ['a member with a foreign owner', (s) => [at(s, join(t.pf, 'foreign.cf'), (p) => { writeFileSync(p, 'x = 1\n'); chownSync(p, 12345, 12345); })], /etc-postfix\/foreign\.cf" is owned by uid 12345/],
    ['a member outside the allow-list', (s) => [at(s, join(t.dir, 'outside', 'x.conf'), (p) => writeFileSync(p, 'x\n'))], /outside\/x\.conf" lies outside what a restore writes/],
    ['a hard link', (s) => [at(s, join(t.pf, 'a.cf'), (p) => writeFileSync(p, 'a\n')), at(s, join(t.pf, 'b.cf'), (p) => execFileSync('ln', [join(s, t.pf, 'a.cf'), p]))], /etc-postfix\/b\.cf" is a hard link/],
  ];

  it.each(hostile.map(([name], i) => [name, i] as const))('a config.tar holding %s is refused with nothing written, even correctly signed', async (_name, i) => {
    if (!root) return skipNotice('root', 'restoring as root');
    const [, add, message] = hostile[i] ?? hostile[0]!;
    const dir = plant(t, `p-hostile-${i}`, add, hostKey(t));
    await refused(dir, message);
  }, 120_000);

  it('backup run as root refuses a LOCAL_DIR another user can write (exit 78), and writes its backups root:mailsvc 0640 in a 0750 directory', async () => {
    if (!root) return skipNotice('root', 'backup run as root');
    const shared = join(t.dir, 'shared');
    mkdirSync(shared, { mode: 0o777 });
    chmodSync(shared, 0o777);
    const viaParent = await runWith(t, join(shared, 'backups'));
    expect(viaParent.code).toBe(78);
    expect(viaParent.stderr).toMatch(/refusing to use the backup directory .*shared\/backups: .*shared is writable by every user/);
    expect(existsSync(join(shared, 'backups'))).toBe(false);
    const owned = join(t.dir, 'nobody-backups');
    mkdirSync(owned, { mode: 0o750 });
    chownSync(owned, 65534, 65534);
    const viaOwner = await runWith(t, owned);
    expect(viaOwner.code).toBe(78);
    expect(viaOwner.stderr).toMatch(/nobody-backups is owned by uid 65534/);
    expect(readdirSync(owned)).toEqual([]);
    // The good directory: root-only files.
    const files = readdirSync(t.backup).map((f) => lstatSync(join(t.backup, f)));
    expect(files.every((s) => s.uid === 0 && (s.mode & 0o777) === 0o640)).toBe(true);
    expect(lstatSync(t.backup).mode & 0o777).toBe(0o750);
  }, 240_000);
});

function writeKey(path: string): string {
  writeFileSync(path, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  return path;
}

function runWith(t: Host, local: string): ReturnType<Host['cli']> {
  return runCli(['backup', 'run', '--full'], { env: { ...t.env, MAILSVC_BACKUP_LOCAL_DIR: local }, timeoutMs: 120_000 });
}
