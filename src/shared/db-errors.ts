/** True for a unique-constraint violation on SQLite, PostgreSQL or MariaDB. */
export function isUniqueViolation(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; errno?: unknown; message?: unknown };
  return (
    e.code === '23505' || // PostgreSQL
    e.code === 'ER_DUP_ENTRY' || e.errno === 1062 || // MariaDB
    (typeof e.code === 'string' && e.code.startsWith('SQLITE_CONSTRAINT') && /UNIQUE|PRIMARY/.test(String(e.message)))
  );
}
