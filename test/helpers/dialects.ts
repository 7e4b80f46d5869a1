import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createConnection } from 'mysql2/promise';
import type { DialectName } from '../../src/db/database.js';
import { skipNotice } from './services.js';

export const POSTGRES_URL = process.env.MAILSVC_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const MARIADB_URL = process.env.MAILSVC_TEST_MARIADB_URL ?? 'mysql://root@127.0.0.1:3306/test';
export const REDIS_URL = process.env.MAILSVC_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The dialect matrix every repository and HTTP test loops over. */
export const DIALECTS: readonly DialectName[] = ['sqlite', 'postgres', 'mysql'];

export type TestDatabase = { url: string; drop(): Promise<void> };

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

const reachable = new Map<DialectName, Promise<string | null>>();

async function probe(dialect: DialectName): Promise<string | null> {
  try {
    if (dialect === 'postgres') {
      const c = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
      await c.connect();
      await c.end();
    } else if (dialect === 'mysql') {
      const c = await createConnection({ uri: MARIADB_URL, connectTimeout: 3000 });
      await c.end();
    }
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/**
 * True when the dialect's server answers. Otherwise prints a notice and
 * returns false (tests skip), or throws under MAILSVC_TEST_REQUIRE_SERVICES=1.
 */
export async function dialectAvailable(dialect: DialectName): Promise<boolean> {
  if (!reachable.has(dialect)) reachable.set(dialect, probe(dialect));
  const why = await reachable.get(dialect);
  if (why === null || why === undefined) return true;
  skipNotice(dialect === 'postgres' ? `PostgreSQL at ${POSTGRES_URL}` : `MariaDB at ${MARIADB_URL}`, why);
  return false;
}

/** A fresh, empty database of the dialect, dropped again by `drop()`. */
export async function createTestDatabase(dialect: DialectName): Promise<TestDatabase> {
  const name = `mailsvc_t_${randomBytes(6).toString('hex')}`;
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-db-'));
    return { url: `sqlite://${join(dir, 'test.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  if (dialect === 'postgres') {
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    return {
      url: withDatabase(POSTGRES_URL, name),
      drop: async () => {
        const c = new pg.Client({ connectionString: POSTGRES_URL });
        await c.connect();
        await c.query(`drop database if exists ${name} with (force)`);
        await c.end();
      },
    };
  }
  const admin = await createConnection({ uri: MARIADB_URL });
  await admin.query(`create database ${name}`);
  await admin.end();
  return {
    url: withDatabase(MARIADB_URL, name),
    drop: async () => {
      const c = await createConnection({ uri: MARIADB_URL });
      await c.query(`drop database if exists ${name}`);
      await c.end();
    },
  };
}
