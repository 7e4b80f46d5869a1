import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { createRequire } from 'node:module';
import { sql } from 'kysely';
import type SqliteDatabaseType from 'better-sqlite3';
import { dumpDatabase } from '../../adapters/db-dump/index.js';
import { createDb } from '../../db/database.js';
import type { Db, DialectName } from '../../db/database.js';

const require = createRequire(import.meta.url);

async function tableNames(db: Db, dialect: DialectName): Promise<string[]> {
  if (dialect === 'sqlite') {
    const r = await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`.execute(db);
    return r.rows.map((x) => x.name);
  }
  if (dialect === 'postgres') {
    const r = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`.execute(db);
    return r.rows.map((x) => x.name);
  }
  const r = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = database() and table_type = 'BASE TABLE' order by table_name`.execute(db);
  return r.rows.map((x) => x.name);
}

async function countAll(db: Db, dialect: DialectName): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of await tableNames(db, dialect)) {
    const r = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(t)}`.execute(db);
    out[t] = Number(r.rows[0]?.n ?? 0);
  }
  return out;
}

function countSqliteFile(file: string): Record<string, number> {
  const Sqlite = require('better-sqlite3') as typeof SqliteDatabaseType;
  const d = new Sqlite(file, { readonly: true, fileMustExist: true });
  try {
    const out: Record<string, number> = {};
    const names = d.prepare("select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name").all() as { name: string }[];
    for (const { name } of names) out[name] = Number((d.prepare(`select count(*) as n from "${name.replace(/"/g, '""')}"`).get() as { n: number }).n);
    return out;
  } finally {
    d.close();
  }
}

/** Rows per table of a MariaDB dump taken with one INSERT per row; every table the dump creates is listed, empty ones with 0. */
async function countMysqlDump(file: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for await (const line of createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity })) {
    const created = /^CREATE TABLE `((?:[^`]|``)+)`/.exec(line);
    if (created?.[1] !== undefined) out[created[1].replace(/``/g, '`')] ??= 0;
    const ins = /^INSERT INTO `((?:[^`]|``)+)` VALUES/.exec(line);
    if (ins?.[1] !== undefined) {
      const t = ins[1].replace(/``/g, '`');
      out[t] = (out[t] ?? 0) + 1;
    }
  }
  return out;
}

/**
 * Dumps the database and returns the rows of every table *as the dump holds
 * them*, so `backup verify` can compare a restored copy exactly: SQLite counts
 * the copy itself; PostgreSQL counts in a transaction whose exported snapshot
 * pg_dump reads; MariaDB counts the INSERT lines of its dump.
 */
export async function dumpWithCounts(url: string, dialect: DialectName, db: Db, file: string, signal?: AbortSignal): Promise<Record<string, number>> {
  if (dialect === 'sqlite') {
    await dumpDatabase({ databaseUrl: url }, file, { signal });
    return countSqliteFile(file);
  }
  if (dialect === 'mysql') {
    await dumpDatabase({ databaseUrl: url }, file, { signal });
    return countMysqlDump(file);
  }
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const snap = await sql<{ id: string }>`select pg_export_snapshot() as id`.execute(trx);
      const counts = await countAll(trx, dialect);
      await dumpDatabase({ databaseUrl: url }, file, { signal, pgSnapshot: snap.rows[0]?.id ?? '' });
      return counts;
    });
}

/** Rows per table of the database at `url` (a scratch copy, or the database after a restore). */
export async function countTables(url: string, dialect: DialectName): Promise<Record<string, number>> {
  const db = createDb(url);
  try {
    return await countAll(db, dialect);
  } finally {
    await db.destroy();
  }
}

/** The differences between two row-count maps, as lines a person can read. */
export function compareCounts(expected: Record<string, number>, actual: Record<string, number>): string[] {
  const problems: string[] = [];
  for (const [t, n] of Object.entries(expected)) {
    if (!(t in actual)) problems.push(`table ${t} is missing from the restored database`);
    else if (actual[t] !== n) problems.push(`table ${t} has ${actual[t]} rows restored, the manifest says ${n}`);
  }
  for (const t of Object.keys(actual)) if (!(t in expected)) problems.push(`table ${t} is in the restored database but not in the manifest`);
  return problems;
}
