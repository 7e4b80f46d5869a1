/**
 * Every table, as Kysely sees it. Each module declares its own tables in its
 * folder (`tables.ts`), merged in here:
 *
 *     declare module '../../db/schema.js' {
 *       interface Database { notes: NoteTable }
 *     }
 *
 * Only the table db/ itself uses is declared here. On every dialect, booleans
 * are 0/1 integers and times epoch milliseconds.
 */
export interface Database {
  /** Keys the service makes once and keeps sealed (db/service-keys.ts). */
  service_keys: { name: string; value: string; created_at: number };
}
