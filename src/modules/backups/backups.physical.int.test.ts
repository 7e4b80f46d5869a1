import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import { createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import { expectOk, json } from '../../../test/helpers/cli.js';
import { backupEnv, makeMailStorage, seedRows, tableRows } from '../../../test/helpers/backups.js';
import type { BackupEnv } from '../../../test/helpers/backups.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { privatePostgresAvailable, startPrivatePostgres } from '../../../test/helpers/private-postgres.js';
import { sha256File } from './manifest.js';
import { MANIFEST_SIG, loadManifestKey, signManifest } from './manifest-key.js';
import type { Manifest } from './manifest.js';

const MOVING = ['audit_log', 'jobs'];
const hasMariabackup = (): boolean => ['/usr/bin/mariabackup', '/usr/bin/mariadb-backup'].some((p) => existsSync(p));

/**
 * Replaces what the physical archive of backup `dir` holds by what `damage`
 * leaves of it, and rewrites the manifest's sha256, size and file count to
 * match: a copy the tool made badly, which only the tool's own check finds.
 */
async function damagePhysicalCopy(t: BackupEnv, dir: string, damage: (unpacked: string) => void): Promise<void> {
  const m = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;
  const a = m.artifacts.find((x) => x.kind === 'database');
  if (!a || !m.database.physical) throw new Error('not a physical backup');
  const unpacked = join(t.dir, 'unpacked');
  mkdirSync(unpacked);
  execFileSync('tar', ['--extract', '--listed-incremental=/dev/null', '--file', join(dir, a.name), '--directory', unpacked]);
  damage(unpacked);
  execFileSync('tar', ['--create', '--gzip', '--file', join(dir, a.name), '--directory', unpacked, '.']);
  const files = Number(execFileSync('sh', ['-c', `find '${unpacked}' -type f | wc -l`]).toString().trim());
  rmSync(unpacked, { recursive: true, force: true });
  a.sha256 = await sha256File(join(dir, a.name));
  a.size = statSync(join(dir, a.name)).size;
  m.database.physical.files = files;
  // Signed again with the host's manifest key: a copy the tool made badly, not a tampered backup.
  const bytes = Buffer.from(JSON.stringify(m));
  writeFileSync(join(dir, 'manifest.json'), bytes);
  const key = loadManifestKey(join(t.data, 'backup-manifest.key'), { create: false });
  if (!key) throw new Error('the backup host has no manifest key');
  writeFileSync(join(dir, MANIFEST_SIG), signManifest(bytes, key));
}

function expectNoBackupLeft(t: BackupEnv): void {
  const left = existsSync(t.local) ? readdirSync(t.local).filter((n) => n !== '.lock') : [];
  expect(left).toEqual([]);
}

describe('DB_MODE=physical on PostgreSQL (a private cluster: pg_basebackup, pg_verifybackup)', () => {
  it('a role without REPLICATION fails the run visibly; with it the copy is staged, verified by pg_verifybackup, and a restore refuses with the manual steps', async () => {
    const why = privatePostgresAvailable();
    if (why) return skipNotice('a private PostgreSQL 15 cluster', why);
    const pg = await startPrivatePostgres();
    const t = backupEnv(pg.url('mail', 'mailsvc'), { MAILSVC_BACKUP_DB_MODE: 'physical' });
    try {
      pg.psql('create role mail login');
      pg.psql('create database mailsvc owner mail');
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 2, 6);
      await seedRows(pg.url('mail', 'mailsvc'), 'p');

      // pg_basebackup refused (no REPLICATION attribute): the run fails with the tool's reason, and no backup appears.
      const refused = await t.cli(['backup', 'run', '--json']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/pg_basebackup exited 1: .*(replication|superuser)/);
      expectNoBackupLeft(t);

      pg.psql('alter role mail replication');
      const run = await t.cli(['backup', 'run', '--json'], 180_000);
      expectOk(run);
      const b = json(run);
      const m = JSON.parse(readFileSync(join(String(b.path), 'manifest.json'), 'utf8')) as Manifest;
      expect(m.database).toMatchObject({ dialect: 'postgres', mode: 'physical', physical: { tool: 'pg_basebackup', database: 'mailsvc' } });
      expect(m.artifacts.map((a) => a.name)).toContain('database-physical.tar.gz');
      expect(m.database.physical?.files).toBeGreaterThan(500);

      const ok = await t.cli(['backup', 'verify', '--json'], 180_000);
      // On failure, show the problems verify printed (stdout), not only its progress lines.
      expect(ok.code, `${ok.stdout}\n${ok.stderr}`).toBe(0);
      expect(json(ok)).toMatchObject({ ok: true, problems: [] });

      // The restore refuses the database part, exit 3, with the exact steps; the database is untouched.
      await seedRows(pg.url('mail', 'mailsvc'), 'after');
      const rows = await tableRows(pg.url('mail', 'mailsvc'), 'postgres', MOVING);
      const restore = await t.cli(['restore', '--source', String(b.path), '--restore-db']);
      expect(restore.code).toBe(3);
      expect(restore.stderr).toContain(`mailsvc: ${String(b.id)} holds a physical copy of the whole PostgreSQL cluster (pg_basebackup), which mailsvc does not apply by itself; nothing was changed`);
      expect(restore.stderr).toContain(`tar --extract --listed-incremental=/dev/null --file ${String(b.path)}/database-physical.tar.gz --directory /var/lib/postgresql/mailsvc-restore`);
      expect(restore.stderr).toContain('/usr/lib/postgresql/15/bin/pg_verifybackup /var/lib/postgresql/mailsvc-restore');
      expect(restore.stderr).toContain('mailsvc db migrate');
      expect(await tableRows(pg.url('mail', 'mailsvc'), 'postgres', MOVING)).toEqual(rows);
      // Neither flag means files and database: refused the same way, the mail untouched too.
      const both = await t.cli(['restore', '--source', String(b.path)]);
      expect(both.code).toBe(3);
      expect(readdirSync(t.dir).filter((n) => n.includes('before-restore'))).toEqual([]);
      // The step the message ends with: the mail alone restores as usual.
      const files = await t.cli(['restore', '--source', String(b.path), '--restore-files', '--json']);
      expectOk(files);
      expect(json(files)).toMatchObject({ restored_files: true, restored_db: false });
      expect(await tableRows(pg.url('mail', 'mailsvc'), 'postgres', MOVING)).toEqual(rows);

      // A copy that does not check out (a data file's content changed after pg_basebackup listed it): pg_verifybackup says so.
      await damagePhysicalCopy(t, String(b.path), (dir) => {
        const f = join(dir, 'global', 'pg_control');
        const buf = readFileSync(f);
        buf[100] = (buf[100] ?? 0) ^ 0xff;
        writeFileSync(f, buf);
      });
      const bad = await t.cli(['backup', 'verify', '--json'], 180_000);
      expect(bad.code).toBe(1);
      expect(JSON.stringify(json(bad).problems)).toMatch(/pg_verifybackup exited 1: .*pg_control/);
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      pg.stop();
    }
  }, 300_000);
});

describe('DB_MODE=physical on MariaDB (mariabackup against the machine server)', () => {
  it('a user without backup privileges fails the run visibly; with them the copy is staged, verified by mariabackup --prepare, and a restore refuses with the manual steps', async () => {
    if (!(await dialectAvailable('mysql'))) return;
    if (!hasMariabackup()) return skipNotice('mariabackup (Debian package mariadb-backup)', 'not installed');
    const db = await createTestDatabase('mysql');
    const user = `bk_${randomBytes(4).toString('hex')}`;
    const root = await createConnection({ uri: db.url });
    const dbName = new URL(db.url).pathname.slice(1);
    await root.query(`create user '${user}'@'%'`);
    await root.query(`grant all on \`${dbName}\`.* to '${user}'@'%'`);
    const url = db.url.replace(/\/\/root@/, `//${user}@`);
    const t = backupEnv(url, { MAILSVC_BACKUP_DB_MODE: 'physical' });
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 1, 5);
      await seedRows(url, 'm');

      const refused = await t.cli(['backup', 'run', '--json'], 180_000);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/mariabackup exited 1: /);
      expectNoBackupLeft(t);

      await root.query(`grant reload, process, lock tables, binlog monitor, select on *.* to '${user}'@'%'`);
      const run = await t.cli(['backup', 'run', '--json'], 300_000);
      expectOk(run);
      const b = json(run);
      const m = JSON.parse(readFileSync(join(String(b.path), 'manifest.json'), 'utf8')) as Manifest;
      expect(m.database).toMatchObject({ dialect: 'mysql', mode: 'physical', physical: { tool: 'mariabackup', database: dbName } });
      expect(Object.keys(m.database.tables)).toContain('domains');

      const ok = await t.cli(['backup', 'verify', '--json'], 300_000);
      // On failure, show the problems verify printed (stdout), not only its progress lines.
      expect(ok.code, `${ok.stdout}\n${ok.stderr}`).toBe(0);
      expect(json(ok)).toMatchObject({ ok: true, problems: [] });

      const rows = await tableRows(url, 'mysql', MOVING);
      const restore = await t.cli(['restore', '--source', String(b.path), '--restore-db']);
      expect(restore.code).toBe(3);
      expect(restore.stderr).toContain('holds a physical copy of the whole MariaDB server (mariabackup)');
      expect(restore.stderr).toContain('mariabackup --prepare --target-dir=/var/lib/mailsvc-mariabackup');
      expect(restore.stderr).toContain('mariabackup --copy-back --target-dir=/var/lib/mailsvc-mariabackup');
      expect(await tableRows(url, 'mysql', MOVING)).toEqual(rows);

      // A copy whose redo log is gone: mariabackup --prepare fails, verify reports it.
      await damagePhysicalCopy(t, String(b.path), (dir) => rmSync(join(dir, 'ib_logfile0')));
      const bad = await t.cli(['backup', 'verify', '--json'], 300_000);
      expect(bad.code).toBe(1);
      expect(JSON.stringify(json(bad).problems)).toMatch(/mariabackup exited 1/);
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      await root.query(`drop user if exists '${user}'@'%'`).catch(() => undefined);
      await root.end();
      await db.drop();
    }
  }, 600_000);
});

describe('DB_MODE=physical on SQLite', () => {
  it('is the online backup page copy, restored automatically like logical', async () => {
    const db = await createTestDatabase('sqlite');
    const t = backupEnv(db.url, { MAILSVC_BACKUP_DB_MODE: 'physical' });
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 1, 3);
      await seedRows(db.url, 's');
      const b = json(await t.cli(['backup', 'run', '--json']));
      const m = JSON.parse(readFileSync(join(String(b.path), 'manifest.json'), 'utf8')) as Manifest;
      expect(m.database).toMatchObject({ dialect: 'sqlite', mode: 'physical' });
      expect(m.database.physical).toBeUndefined();
      expect(m.artifacts.map((a) => a.name)).toContain('database.sqlite');
      const rows = await tableRows(db.url, 'sqlite', MOVING);
      await seedRows(db.url, 'later');
      expectOk(await t.cli(['restore', '--source', String(b.path), '--restore-db']));
      expect(await tableRows(db.url, 'sqlite', MOVING)).toEqual(rows);
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
    }
  }, 120_000);
});
