import { chownSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { changeStampOf, createDb } from './database.js';
import type { Db } from './database.js';

describe('the change stamp beside an SQLite database', () => {
  const dirs: string[] = [];
  const dbs: Db[] = [];
  afterEach(async () => {
    for (const db of dbs.splice(0)) await db.destroy();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const open = (): { db: Db; file: string } => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-stamp-'));
    dirs.push(dir);
    const file = join(dir, 'mailsvc.db');
    writeFileSync(file, '');
    const db = createDb(`sqlite://${file}`);
    dbs.push(db);
    return { db, file };
  };

  it('a touch in one process moves what another reader of the same database sees; no file for PostgreSQL-like callers is made', () => {
    const a = open();
    const b = createDb(`sqlite://${a.file}`);
    dbs.push(b);
    const writer = changeStampOf(a.db, 'token-revocations');
    const reader = changeStampOf(b, 'token-revocations');
    expect(writer && reader).toBeTruthy();
    const before = reader?.read();
    expect(reader?.read()).toBe(before);
    writer?.touch();
    const after = reader?.read();
    expect(after).not.toBe(before);
    expect(reader?.read()).toBe(after);
  });

  it.skipIf(process.getuid?.() !== 0)('made by root (a CLI command, a root unit): given to the database file\'s owner, so the service can still append', () => {
    const { db, file } = open();
    chownSync(file, 65534, 65534);
    changeStampOf(db, 'token-revocations')?.touch();
    const st = statSync(`${file}-token-revocations`);
    expect({ uid: st.uid, gid: st.gid, mode: st.mode & 0o777, size: st.size }).toEqual({ uid: 65534, gid: 65534, mode: 0o640, size: 1 });
    // A reader as root that makes it first gives it away too.
    const other = open();
    chownSync(other.file, 65534, 65534);
    changeStampOf(other.db, 'token-revocations')?.read();
    expect(statSync(`${other.file}-token-revocations`).uid).toBe(65534);
  });
});
