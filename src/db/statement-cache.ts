import type { Database, Statement } from 'better-sqlite3';

/**
 * Kysely's SQLite driver prepares every statement anew; preparing costs more
 * than running a simple one. This keeps the most recent prepared statements by
 * SQL text (better-sqlite3 runs one statement at a time, so reuse is safe).
 * `onClose` runs when the database is closed.
 */
export function withStatementCache(db: Database, max = 256, onClose?: () => void): Database {
  const cache = new Map<string, Statement>();
  const prepare = db.prepare.bind(db);
  const cached = (sql: string): Statement => {
    let stmt = cache.get(sql);
    if (stmt) {
      cache.delete(sql);
    } else {
      stmt = prepare(sql);
      if (cache.size >= max) cache.delete(cache.keys().next().value as string);
    }
    cache.set(sql, stmt);
    return stmt;
  };
  return new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'prepare') return cached;
      // Whatever was opened beside the database goes with it.
      if (prop === 'close' && onClose) {
        return () => {
          onClose();
          return target.close();
        };
      }
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
