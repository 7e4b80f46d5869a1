import type { Generated } from 'kysely';

/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

export type DomainTable = {
  id: Generated<number>;
  name: string;
  active: number;
  created_at: number;
  updated_at: number;
};

declare module '../../db/schema.js' {
  interface Database {
    domains: DomainTable;
  }
}
