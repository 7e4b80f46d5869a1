/**
 * A certificate mailsvc keeps (one row per certificate name, `mail` by
 * default) and the ACME accounts it signs requests with. Times are epoch
 * milliseconds; the private keys are sealed (SecretBox, SEALED_COLUMNS).
 */
export type CertificateTable = {
  name: string;
  /** JSON array of the DNS names asked for at the last attempt. */
  names: string;
  /** The certificate in service: chain PEM, its sealed key, what it says. Null until one was proven. */
  chain_pem: string | null;
  private_key: string | null;
  serial: string | null;
  sha256: string | null;
  not_before: number | null;
  not_after: number | null;
  /** The CA's ACME Renewal Information (RFC 9773) for it: the suggested window, and when to ask again. */
  ari_start: number | null;
  ari_end: number | null;
  ari_next_check: number | null;
  issued_at: number | null;
  revoked_at: number | null;
  /** The last attempt: when, how it ended, how many failed in a row, and when the next may start. */
  last_attempt_at: number | null;
  last_error: string | null;
  failures: number;
  next_attempt_at: number | null;
  /** JSON of the last on-the-wire proof (ports, served SHA-256, matches). */
  proof: string | null;
  /**
   * A certificate issued with a new key for the mail host, held back until its
   * DANE record is published everywhere and the TTL has passed (docs/certs.md
   * "DANE"): its chain, its sealed key, the names, when it was issued. The
   * renewal timer deploys it when the key change is at ready-to-deploy.
   */
  pending_chain_pem: string | null;
  pending_private_key: string | null;
  pending_names: string | null;
  pending_since: number | null;
  created_at: number;
  updated_at: number;
};

export type AcmeAccountTable = {
  /** SHA-256 (hex, 32 chars) of the directory URL: one account per CA. */
  id: string;
  directory_url: string;
  account_key: string;
  account_url: string | null;
  created_at: number;
};

declare module '../../db/schema.js' {
  interface Database {
    certificates: CertificateTable;
    acme_accounts: AcmeAccountTable;
  }
}
