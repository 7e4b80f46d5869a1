export {};

/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

declare module '../../db/schema.js' {
  interface Database {
    /** One row (id 1): locked by every change to the address space. */
    mail_routing: { id: number; version: number };
  }
}
