import { existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Settings } from '../config/settings.js';

/** The data directory holds password hashes and sealed secrets: owner and group only. */
export const DATA_DIR_MODE = 0o750;
export const DB_FILE_MODE = 0o640;

/** Makes the data directory (0750) when it is missing; an existing one is left as the administrator set it. */
export function ensureDataDir(settings: Pick<Settings, 'dataDir'>): void {
  if (!existsSync(settings.dataDir)) mkdirSync(settings.dataDir, { recursive: true, mode: DATA_DIR_MODE });
}

/**
 * What in the data directory others may read or write: one line per file.
 * Group access is allowed (the documented SQLite set-up shares the database
 * with Dovecot and Postfix through a group); the key file must be 0600.
 */
export function looseModes(settings: Pick<Settings, 'dataDir' | 'databaseUrl'>): string[] {
  const out: string[] = [];
  const check = (path: string, allowed: number): void => {
    if (!existsSync(path)) return;
    const mode = statSync(path).mode & 0o777;
    if ((mode & ~allowed) !== 0) out.push(`${path} is mode ${mode.toString(8).padStart(4, '0')}; at most ${allowed.toString(8).padStart(4, '0')} (chmod ${(mode & allowed).toString(8)} ${path})`);
  };
  check(settings.dataDir, 0o770);
  check(join(settings.dataDir, 'secret.key'), 0o600);
  if (settings.databaseUrl.startsWith('sqlite://')) {
    const db = settings.databaseUrl.slice('sqlite://'.length);
    // -token-revocations: the token caches' change stamp (src/db/database.ts, ChangeStamp).
    for (const path of [db, `${db}-wal`, `${db}-shm`, `${db}-token-revocations`]) check(path, 0o660);
  }
  return out;
}
