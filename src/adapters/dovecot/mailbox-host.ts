import type { HelperClient } from '../helper-client.js';
import type { SieveRules } from '../../shared/sieve-rules.js';

/** A mailbox's usage as Dovecot counts it; a limit of null is no limit. */
export type MailboxUsage = { storage_bytes: number; storage_limit_bytes: number | null; messages: number; message_limit: number | null };

/** What the user portal asks of Dovecot about one mailbox. */
export type MailboxHost = {
  usage(user: string): Promise<MailboxUsage>;
  /** Stores and activates the mailbox's self-service Sieve script, rendered from the rules. */
  putSieve(user: string, rules: SieveRules): Promise<void>;
};

type QuotaRow = { root?: string; type?: string; value?: string; limit?: string };

const num = (v: string | undefined): number | null => (v === undefined || !/^\d+$/.test(v) ? null : Number(v));

/** `doveadm -f json quota get` rows: STORAGE in KiB, MESSAGE in messages; "-" is no limit. */
export function parseQuotaJson(stdout: string): MailboxUsage {
  const rows = JSON.parse(stdout) as QuotaRow[];
  if (!Array.isArray(rows)) throw new Error('doveadm quota get: not a JSON array');
  const storage = rows.find((r) => r.type === 'STORAGE');
  const messages = rows.find((r) => r.type === 'MESSAGE');
  const kib = (v: number | null) => (v === null ? null : v * 1024);
  return {
    storage_bytes: kib(num(storage?.value)) ?? 0,
    storage_limit_bytes: kib(num(storage?.limit)),
    messages: num(messages?.value) ?? 0,
    message_limit: num(messages?.limit),
  };
}

/** Through the privileged helper (doveadm needs root to act as the mailbox's user). */
export class HelperMailboxHost implements MailboxHost {
  constructor(private readonly helper: HelperClient) {}

  async usage(user: string): Promise<MailboxUsage> {
    return parseQuotaJson((await this.helper.run('doveadm-quota-get', [user])).stdout);
  }

  async putSieve(user: string, rules: SieveRules): Promise<void> {
    await this.helper.run('sieve-put', [user, JSON.stringify(rules)]);
  }
}
