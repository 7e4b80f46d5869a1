import { LIMITS } from '../../shared/limit-keys.js';
import type { LimitValues } from '../../shared/limit-keys.js';
import type { DaemonState } from './daemon-state.js';

/** A row of `limits show`: the value, its default, what the daemon really runs with, and whether they differ. */
export type LimitRow = { key: string; value: number; default: number; unit: string; in_force: number | null; drift: boolean; applies_to: string[] };

/**
 * Each limit beside what is really in force: Postfix through postconf, fail2ban
 * through the running server, Rspamd through its local.d files, Dovecot
 * through doveconf. A limit the
 * service itself reads is in force as stored. Drift: a value read differs.
 */
export async function limitRows(values: LimitValues, defaults: LimitValues, state: DaemonState): Promise<LimitRow[]> {
  const [postfix, dovecot, fail2ban] = await Promise.all([state.postfix(), state.dovecot(), state.fail2ban()]);
  const rspamd = state.rspamd();
  const readings: Record<string, (number | null | undefined)[]> = {
    'message-size-limit': [postfix?.message_size_limit, rspamd?.max_message, dovecot],
    'smtp-recipient-limit': [postfix?.smtpd_recipient_limit],
    'postfix-client-connection-rate-limit': [postfix?.smtpd_client_connection_rate_limit],
    'spam-score-add-header': [rspamd?.add_header],
    'spam-score-greylist': [rspamd?.greylist],
    'spam-score-reject': [rspamd?.reject],
    'greylist-delay': [rspamd?.timeout],
    'greylist-expire': [rspamd?.expire],
  };
  return LIMITS.map((l) => {
    const value = values[l.key] ?? l.default;
    const read = l.appliesTo.includes('service') ? [value] : l.key.startsWith('fail2ban-') ? [fail2ban?.[l.key]] : (readings[l.key] ?? []);
    const known = read.filter((v): v is number => typeof v === 'number');
    return {
      key: l.key,
      value,
      default: defaults[l.key] ?? l.default,
      unit: l.unit,
      in_force: known.find((v) => v !== value) ?? known[0] ?? null,
      drift: known.some((v) => v !== value),
      applies_to: [...l.appliesTo],
    };
  });
}
