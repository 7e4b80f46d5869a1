/**
 * The database dialect named by a MAILSVC_DATABASE_URL, without loading Kysely
 * or a driver: a command that never opens the database (queue list) loads
 * neither.
 */
export type DialectName = 'sqlite' | 'postgres' | 'mysql';

export function dialectOf(url: string): DialectName {
  if (url.startsWith('sqlite:')) return 'sqlite';
  if (url.startsWith('postgres:') || url.startsWith('postgresql:')) return 'postgres';
  if (url.startsWith('mysql:') || url.startsWith('mariadb:')) return 'mysql';
  throw new Error(`unsupported database URL scheme in ${url.split(':')[0]}:`);
}
