import { describe, expect, it } from 'vitest';
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join, relative } from 'node:path';
import pg from 'pg';
import { createConnection } from 'mysql2/promise';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import { expectOk, json, runCli } from '../../../test/helpers/cli.js';
import { backupEnv, makeMailStorage, seedRows, tableRows, treeSnapshot } from '../../../test/helpers/backups.js';
import { createDb } from '../../db/database.js';
import type { DialectName } from '../../db/database.js';
import { loadSecretBox } from '../../shared/secret-key-file.js';
import { BackupSecrets } from './backup-secrets.repository.js';

/** The database of `url` dropped and made again, empty: a new database server that has nothing yet. */
async function emptyAgain(url: string, dialect: DialectName): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  const admin = new URL(url);
  if (dialect === 'postgres') {
    admin.pathname = '/postgres';
    const c = new pg.Client({ connectionString: admin.toString() });
    await c.connect();
    await c.query(`drop database if exists ${name} with (force)`);
    await c.query(`create database ${name}`);
    await c.end();
  } else if (dialect === 'mysql') {
    admin.pathname = '/';
    const c = await createConnection({ uri: admin.toString() });
    await c.query(`drop database if exists ${name}`);
    await c.query(`create database ${name}`);
    await c.end();
  }
}

/** Every path under `root` with its type, mode, owner and (files) content: equal text = nothing changed. */
function snapshot(root: string): string[] {
  const out: string[] = [];
  const walk = (p: string): void => {
    if (!existsSync(p)) return;
    const st = lstatSync(p);
    out.push(`${relative(root, p) || '.'} ${st.mode.toString(8)} ${st.uid}:${st.gid} ${st.isFile() ? readFileSync(p, 'base64') : ''}`);
    if (st.isDirectory()) for (const n of readdirSync(p).sort()) walk(join(p, n));
  };
  walk(root);
  return out;
}

/**
 * The backup host: its data directory with the key file (no MAILSVC_SECRET_KEY),
 * a settings file of its own (holding the database URL on PostgreSQL and
 * MariaDB, as an installed host has it), one sealed secret in the database, a
 * full backup and an incremental on it.
 */
async function backupHost(dialect: DialectName) {
  const db = await createTestDatabase(dialect);
  const h = backupEnv(db.url);
  const settingsFile = join(h.dir, 'etc-mailsvc', 'mailsvc.conf');
  mkdirSync(join(h.dir, 'etc-mailsvc'), { mode: 0o750 });
  writeFileSync(settingsFile, `MAILSVC_BACKUP_COMPRESSION=gzip\n${dialect === 'sqlite' ? '' : `MAILSVC_DATABASE_URL=${db.url}\n`}`, { mode: 0o640 });
  writeFileSync(join(h.data, 'secret.key'), `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  const env: Record<string, string> = { ...h.env, MAILSVC_CONFIG_FILE: settingsFile, MAILSVC_BACKUP_CONFIG_PATHS: join(h.dir, 'none') };
  delete env.MAILSVC_SECRET_KEY;
  if (dialect === 'sqlite') env.MAILSVC_DATABASE_URL = `sqlite://${join(h.data, 'mailsvc.db')}`;
  else delete env.MAILSVC_DATABASE_URL;
  const cli = (args: string[]) => runCli(args, { env, timeoutMs: 180_000 });
  expectOk(await cli(['db', 'migrate']));
  const url = dialect === 'sqlite' ? `sqlite://${join(h.data, 'mailsvc.db')}` : db.url;
  const conn = createDb(url);
  const sealed = await new BackupSecrets(conn, () => loadSecretBox({ dataDir: h.data, secretKey: undefined, secretKeyPrevious: [] }, { create: false })).encryptionKey();
  await conn.destroy();
  await seedRows(url, 'fresh');
  makeMailStorage(h.mail, 2, 4);
  expectOk(await cli(['backup', 'run', '--full', '--json']));
  makeMailStorage(join(h.mail, 'later'), 1, 2);
  const incr = json(await cli(['backup', 'run', '--json']));
  expect(incr.type).toBe('incremental');
  const rows = await tableRows(url, dialect, ['audit_log', 'jobs']);
  const tree = treeSnapshot(h.mail);
  const settingsText = readFileSync(settingsFile, 'utf8');
  const keyText = readFileSync(join(h.data, 'secret.key'), 'utf8');
  // Saved off the host, as `backup show` tells the administrator to.
  const savedKey = join(h.dir, 'saved-manifest.key');
  cpSync(join(h.data, 'backup-manifest.key'), savedKey);
  return { db, h, url, source: String(incr.path), savedKey, sealed: sealed.key, rows, tree, settingsText, keyText };
}

/** The new host: nothing but the backup (and the saved manifest key); its own data directory and settings path. */
function freshHost(h: { dir: string; env: Record<string, string> }) {
  const f = join(h.dir, 'new-host');
  const env: Record<string, string> = {
    MAILSVC_DATA_DIR: join(f, 'data'),
    MAILSVC_CONFIG_FILE: join(f, 'mailsvc.conf'),
    MAILSVC_MAIL_STORAGE: join(f, 'vmail'),
    MAILSVC_BACKUP_LOCAL_DIR: join(f, 'backups'),
    MAILSVC_HELPER: 'direct',
    MAILSVC_POSTFIX_CONFIG_DIR: join(f, 'etc-postfix'),
  };
  mkdirSync(join(f, 'data'), { recursive: true });
  return { f, env, cli: (args: string[], extra: Record<string, string> = {}) => runCli(args, { env: { ...env, ...extra }, timeoutMs: 180_000 }) };
}

describe('restore on a host that has nothing but the backup', () => {
  for (const dialect of DIALECTS) {
    it(`${dialect}: the key file and settings file land at this host's MAILSVC_DATA_DIR and MAILSVC_CONFIG_FILE, the restore proves the result opens, and the restored host opens its sealed secret`, async () => {
      if (!(await dialectAvailable(dialect))) return;
      const b = await backupHost(dialect);
      try {
        // Disaster: the backup host's data directory, settings, mail and database are gone.
        for (const d of [b.h.data, join(b.h.dir, 'etc-mailsvc'), b.h.mail]) rmSync(d, { recursive: true, force: true });
        await emptyAgain(b.db.url, dialect);
        const n = freshHost(b.h);
        const r = await n.cli(['restore', '--source', b.source, '--restore-config', '--manifest-key', b.savedKey, '--json']);
        expectOk(r);
        const report = json(r);
        expect(report).toMatchObject({ restored_files: true, restored_db: true, restored_config: true });
        const steps = (report.steps as string[]).join('\n');
        expect(steps).toMatch(/proved: the database .* opens, schema \d+/);
        expect(steps).toMatch(/proved: a sealed secret \(backup_secrets\.value\) decrypts with key [0-9a-f]{8}/);
        expect(readFileSync(join(n.f, 'mailsvc.conf'), 'utf8')).toBe(b.settingsText);
        expect(readFileSync(join(n.f, 'data', 'secret.key'), 'utf8')).toBe(b.keyText);
        expect(treeSnapshot(join(n.f, 'vmail'))).toEqual(b.tree);
        const url = dialect === 'sqlite' ? `sqlite://${join(n.f, 'data', 'mailsvc.db')}` : b.url;
        expect(await tableRows(url, dialect, ['audit_log', 'jobs'])).toEqual(b.rows);
        // The restored host starts: a command that opens the restored sealed secret with the restored key.
        const key = await n.cli(['backup', 'encryption-key']);
        expectOk(key);
        expect(key.stdout.split('\n')[0]).toBe(b.sealed);
      } finally {
        rmSync(b.h.dir, { recursive: true, force: true });
        await b.db.drop();
      }
    }, 600_000);
  }

  it('a refused restore changes nothing: no database file, no backup directory, no settings file (bad manifest, missing key, wrong source)', async () => {
    const b = await backupHost('sqlite');
    try {
      const n = freshHost(b.h);
      // The backup's manifest changed after it was signed (a copy: the original stays good).
      const tampered = join(b.h.dir, 'tampered');
      cpSync(b.h.local, tampered, { recursive: true });
      const id = b.source.split('/').at(-1) ?? '';
      const mf = join(tampered, id, 'manifest.json');
      writeFileSync(mf, readFileSync(mf, 'utf8').replace('"gzip"', '"none"'));
      const before = snapshot(n.f);
      const cases: [string[], RegExp][] = [
        [['--source', join(tampered, id), '--restore-config', '--manifest-key', b.savedKey], /refusing to restore, nothing was changed/],
        [['--source', b.source, '--restore-config'], /refusing to restore, nothing was changed|manifest key|signed/],
        [['--source', b.source, '--restore-config', '--manifest-key', join(n.f, 'no-such.key')], /refusing to restore, nothing was changed: --manifest-key .* does not exist/],
        [['--source', join(b.h.dir, 'none'), '--restore-config', '--manifest-key', b.savedKey], /holds no manifest\.json/],
      ];
      for (const [args, message] of cases) {
        const r = await n.cli(['restore', ...args]);
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).not.toBe(0);
        expect(r.stderr).toMatch(message);
        expect(snapshot(n.f), args.join(' ')).toEqual(before);
      }
      expect(existsSync(join(n.f, 'data', 'mailsvc.db'))).toBe(false);
      expect(existsSync(join(n.f, 'backups'))).toBe(false);
    } finally {
      rmSync(b.h.dir, { recursive: true, force: true });
      await b.db.drop();
    }
  }, 600_000);

  it('a restore whose result would not open says what is wrong and exits non-zero: the configuration (key file) restored over a database it did not restore', async () => {
    const b = await backupHost('sqlite');
    try {
      const n = freshHost(b.h);
      // This host already runs with its own key and a sealed secret of its own.
      expectOk(await n.cli(['db', 'migrate']));
      const conn = createDb(`sqlite://${join(n.f, 'data', 'mailsvc.db')}`);
      await new BackupSecrets(conn, () => loadSecretBox({ dataDir: join(n.f, 'data'), secretKey: undefined, secretKeyPrevious: [] }, { create: true })).encryptionKey();
      await conn.destroy();
      const r = await n.cli(['restore', '--source', b.source, '--restore-files', '--restore-config', '--manifest-key', b.savedKey]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/the result does not open, so it is not complete: a sealed secret \(backup_secrets\.value, sealed with key [0-9a-f]{8}\) does not decrypt with the loaded key [0-9a-f]{8}/);
      expect(r.stderr).not.toMatch(/restore complete/);
    } finally {
      rmSync(b.h.dir, { recursive: true, force: true });
      await b.db.drop();
    }
  }, 600_000);
});
