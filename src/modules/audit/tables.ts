import type { Generated } from 'kysely';

/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

export type AuditLogTable = {
  id: Generated<number>;
  at: number;
  /** The admin username, or the OS user on the host CLI. */
  actor: string;
  token_id: string | null;
  /** The client address, or `cli`. */
  source: string;
  action: string;
  target: string | null;
  /** JSON object of scalar fields, secrets redacted. */
  summary: string;
  /** `ok` or an error code. */
  result: string;
};

declare module '../../db/schema.js' {
  interface Database {
    audit_log: AuditLogTable;
  }
}
