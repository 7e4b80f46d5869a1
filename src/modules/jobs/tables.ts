/* This module's tables, as Kysely sees them: merged into Database (src/db/schema.ts). */

export type JobTable = {
  id: string;
  kind: string;
  state: 'queued' | 'running' | 'succeeded' | 'failed';
  progress: number;
  message: string;
  /** JSON */
  input: string;
  /** JSON, once succeeded */
  result: string | null;
  error: string | null;
  owner: string | null;
  heartbeat_at: number | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
};

declare module '../../db/schema.js' {
  interface Database {
    jobs: JobTable;
  }
}
