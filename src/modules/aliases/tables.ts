import type { Generated } from 'kysely';

/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

export type AliasTable = {
  id: Generated<number>;
  domain_id: number;
  source: string;
  /** Comma-separated addresses, as Postfix's virtual_alias_maps returns them. */
  destination: string;
  active: number;
  created_at: number;
  updated_at: number;
};

declare module '../../db/schema.js' {
  interface Database {
    aliases: AliasTable;
  }
}
