import type { DnsAnswer, RecordOf, RecordType } from '../../../adapters/dns/dns-client.js';
import type { DkimKeyRow } from '../dkim.repository.js';

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'unknown';
/**
 * One check: pass; warn (a recommendation: DNSSEC and DANE while the zone is
 * not signed, never a failure); fail; or "could not determine" (unknown: a
 * timeout is not a failure); and what to fix.
 */
export type CheckResult = { id: string; name: string; status: CheckStatus; detail: string; fix: string | null };

/** Asks a DNS question once per run, whoever asks it (checks run in parallel and share answers). */
export type Ask = <T extends RecordType>(name: string, type: T) => Promise<DnsAnswer<RecordOf<T>>>;

export type CheckInput = {
  domain: string;
  mailHost: string;
  publicIp: string | undefined;
  /** Questions about the domain's own zone: its authoritative servers. */
  zone: Ask;
  /** Other questions (include targets, the reverse zone, a mail host in another zone): the resolvers. */
  any: Ask;
  dkim: readonly DkimKeyRow[];
};

export const pass = (id: string, name: string, detail: string): CheckResult => ({ id, name, status: 'pass', detail, fix: null });
export const warn = (id: string, name: string, detail: string, fix: string): CheckResult => ({ id, name, status: 'warn', detail, fix });
export const fail = (id: string, name: string, detail: string, fix: string): CheckResult => ({ id, name, status: 'fail', detail, fix });
export const unknown = (id: string, name: string, detail: string, fix = 'Run the check again; if it persists, check that the DNS servers answer.'): CheckResult => ({ id, name, status: 'unknown', detail, fix });

/** The strings of each TXT record joined (RFC 7208 §3.3 / RFC 6376: one value per record). */
export const txtValues = (records: readonly string[][]): string[] => records.map((r) => r.join(''));
export const bare = (name: string): string => name.toLowerCase().replace(/\.$/, '');

/** The DNS servers gave no answer (timeout, refused): what depends on the name cannot be determined. */
export class DnsUnanswered extends Error {
  constructor(detail: string) {
    super(`no DNS answer: ${detail}`);
    this.name = 'DnsUnanswered';
  }
}
