import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { createConnection } from 'mysql2/promise';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import { expectOk, json } from '../../../test/helpers/cli.js';
import { backupEnv, makeMailStorage, seedRows, tableRows, treeSnapshot, writeMessage } from '../../../test/helpers/backups.js';
import type { DialectName } from '../../db/database.js';

/** Empties the database for real: the SQLite file goes, the server database loses every table. */
async function wipeDatabase(url: string, dialect: DialectName): Promise<void> {
  if (dialect === 'sqlite') {
    const path = url.slice('sqlite://'.length);
    for (const f of [path, `${path}-wal`, `${path}-shm`]) rmSync(f, { force: true });
  } else if (dialect === 'postgres') {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query('drop schema public cascade; create schema public');
    await c.end();
  } else {
    const c = await createConnection({ uri: url });
    const [rows] = await c.query('select table_name as t from information_schema.tables where table_schema = database()');
    await c.query('set foreign_key_checks = 0');
    for (const r of rows as { t: string }[]) await c.query(`drop table \`${r.t}\``);
    await c.end();
  }
}

// Written by the CLI after the command (audit) and by the job runner after the dump (the job's own final state).
const MOVING = ['audit_log', 'jobs'];

describe.each(DIALECTS)('backup → wipe → restore round trip (%s)', (dialect) => {
  it('a full and two incrementals restore as a chain: the maildir byte-identical with modes and times, every table equal', async () => {
    if (!(await dialectAvailable(dialect))) return;
    const db = await createTestDatabase(dialect);
    const t = backupEnv(db.url);
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 3, 15);
      await seedRows(db.url, 'a');
      const full = await t.cli(['backup', 'run', '--json']);
      expectOk(full);
      const f = json(full);
      expect(f).toMatchObject({ type: 'full', parent: null, files: 48, verify_ok: null });

      // Changes between the backups: new mail, a message read (moved new→cur), one deleted, new rows.
      const box = join(t.mail, 'example.com', 'user0', 'Maildir');
      writeMessage(join(box, 'new'), 9001, Date.now() - 3_600_000);
      const moved = readdirSync(join(box, 'new'))[0] ?? '';
      const { renameSync } = await import('node:fs');
      renameSync(join(box, 'new', moved), join(box, 'cur', `${moved}S`));
      unlinkSync(join(box, 'cur', readdirSync(join(box, 'cur')).sort()[0] ?? ''));
      await seedRows(db.url, 'b');
      const inc1 = await t.cli(['backup', 'run', '--json']);
      expectOk(inc1);
      expect(json(inc1)).toMatchObject({ type: 'incremental', parent: f.id });

      writeMessage(join(t.mail, 'example.com', 'user2', 'Maildir', 'cur'), 9002, Date.now() - 60_000, 0o640);
      rmSync(join(t.mail, 'example.com', 'user1'), { recursive: true });
      await seedRows(db.url, 'c');
      const inc2 = await t.cli(['backup', 'run', '--json']);
      expectOk(inc2);
      const i2 = json(inc2);
      expect(i2).toMatchObject({ type: 'incremental', parent: json(inc1).id });

      const list = await t.cli(['backup', 'list', '--json']);
      expect((JSON.parse(list.stdout) as { id: string }[]).map((x) => x.id)).toEqual([i2.id, json(inc1).id, f.id]);

      const tree = treeSnapshot(t.mail);
      const rows = await tableRows(db.url, dialect, MOVING);

      rmSync(t.mail, { recursive: true, force: true });
      await wipeDatabase(db.url, dialect);

      const r = await t.cli(['restore', '--source', String(i2.path), '--json']);
      expectOk(r);
      expect(json(r)).toMatchObject({ chain: [f.id, json(inc1).id, i2.id], restored_files: true, restored_db: true });
      expect(treeSnapshot(t.mail)).toEqual(tree);
      expect(await tableRows(db.url, dialect, MOVING)).toEqual(rows);
      // The restored database is usable by mailsvc at once (migrated).
      expectOk(await t.cli(['backup', 'show', '--json']));
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
    }
  }, 240_000);
});

describe('restore refuses before touching anything', () => {
  it('a flipped byte in an archive, and a missing incremental: exit 1, mail and database unchanged', async () => {
    const db = await createTestDatabase('sqlite');
    const t = backupEnv(db.url);
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 2, 10);
      const f = json(await t.cli(['backup', 'run', '--json']));
      writeMessage(join(t.mail, 'example.com', 'user0', 'Maildir', 'cur'), 77, Date.now());
      const i1 = json(await t.cli(['backup', 'run', '--json']));
      writeMessage(join(t.mail, 'example.com', 'user0', 'Maildir', 'cur'), 78, Date.now());
      const i2 = json(await t.cli(['backup', 'run', '--json']));
      // After the backups: a state the refused restore must leave alone.
      writeMessage(join(t.mail, 'example.com', 'user1', 'Maildir', 'cur'), 79, Date.now());
      await seedRows(db.url, 'after');
      const tree = treeSnapshot(t.mail);
      const rows = await tableRows(db.url, 'sqlite', MOVING);

      const archive = join(String(f.path), readdirSync(String(f.path)).find((n) => n.startsWith('mail.tar')) ?? '');
      const { openSync, readSync, writeSync, closeSync, statSync } = await import('node:fs');
      const fd = openSync(archive, 'r+');
      const at = Math.floor(statSync(archive).size / 2);
      const b = Buffer.alloc(1);
      readSync(fd, b, 0, 1, at);
      b[0] = (b[0] ?? 0) ^ 0x01;
      writeSync(fd, b, 0, 1, at);
      closeSync(fd);
      const flipped = await t.cli(['restore', '--source', String(i2.path)]);
      expect(flipped.code).toBe(1);
      expect(flipped.stderr).toMatch(/^mailsvc: refusing to restore, nothing was changed: .*mail\.tar\.gz does not match its sha256/m);
      expect(treeSnapshot(t.mail)).toEqual(tree);

      const v = await t.cli(['backup', 'verify', '--json']);
      expect(v.code).toBe(1);
      expect(json(v)).toMatchObject({ ok: false });
      const listed = JSON.parse((await t.cli(['backup', 'list', '--json'])).stdout) as { id: string; verify_ok: boolean | null }[];
      expect(listed[0]).toMatchObject({ id: i2.id, verify_ok: false });

      rmSync(String(i1.path), { recursive: true });
      const missing = await t.cli(['restore', '--source', String(i2.path)]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain(`the chain is broken: ${String(i1.id)}`);
      expect(treeSnapshot(t.mail)).toEqual(tree);
      expect(await tableRows(db.url, 'sqlite', MOVING)).toEqual(rows);
      expect(existsSync(String(i2.path))).toBe(true);
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
    }
  }, 120_000);

  it('verify on an intact chain passes and is shown by backup show', async () => {
    const db = await createTestDatabase('sqlite');
    const t = backupEnv(db.url);
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 2, 10);
      await seedRows(db.url, 'v');
      expectOk(await t.cli(['backup', 'run']));
      writeFileSync(join(t.mail, 'example.com', 'user0', 'Maildir', 'dovecot-uidlist'), '3 V0 N99\n');
      expectOk(await t.cli(['backup', 'run']));
      const v = await t.cli(['backup', 'verify', '--json']);
      expectOk(v);
      expect(json(v)).toMatchObject({ ok: true, problems: [] });
      const show = json(await t.cli(['backup', 'show', '--json']));
      expect(show).toMatchObject({ last_verify: { ok: true }, last_backup: { verify_ok: true } });
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
    }
  }, 120_000);
});
