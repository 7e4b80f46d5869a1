import type { Generated } from 'kysely';

/** What one port served at its last check (or deploy proof). Times are epoch milliseconds. */
export type TlsPortTable = {
  id: string;
  kind: string;
  port: number;
  served_sha256: string | null;
  subject: string | null;
  not_after: number | null;
  /** Why the port is not well (not served, expiring, stale after a deploy …); null when it is. */
  problem: string | null;
  checked_at: number;
};

/** One deploy of a certificate and its proof on the wire; `ok` 0/1, `ports_json` the ports as proven. */
export type TlsDeployTable = { id: Generated<number>; cert_name: string; sha256: string; ok: number; detail: string; ports_json: string; created_at: number };

declare module '../../db/schema.js' {
  interface Database {
    tls_ports: TlsPortTable;
    tls_deploys: TlsDeployTable;
  }
}
