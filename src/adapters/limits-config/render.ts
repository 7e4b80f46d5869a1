import type { LimitValues } from '../../shared/limit-keys.js';

/**
 * Pure renders of the limits into the daemons' files (no I/O). Postfix's
 * main.cf and Rspamd's local.d files may hold an administrator's other
 * settings: only the limit parameters are replaced (postconf -e semantics:
 * the existing line and its continuation lines, else appended). The fail2ban
 * jails are rendered by jails.ts / jail-plan.ts.
 */

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `postconf -e name=value` on main.cf text: the parameter's line (and its indented continuation lines) replaced, else appended. */
export function setMainCfParams(text: string, params: Readonly<Record<string, string>>): string {
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  for (const [name, value] of Object.entries(params)) {
    const start = lines.findIndex((l) => new RegExp(`^${escape(name)}\\s*=`).test(l));
    const line = `${name} = ${value}`;
    if (start < 0) {
      lines.push(line);
      continue;
    }
    let end = start + 1;
    while (end < lines.length && /^\s+\S/.test(lines[end] ?? '') && !/^\s*#/.test(lines[end] ?? '')) end++;
    lines.splice(start, end - start, line);
  }
  return `${lines.join('\n')}\n`;
}

/** Postfix's mailbox limits as they are in force: each must not be below the message size limit (0: none). */
export type PostfixMailboxLimits = { mailbox_size_limit: number; virtual_mailbox_limit: number };

export function postfixParams(values: LimitValues, mailbox: PostfixMailboxLimits): Record<string, string> {
  const size = values['message-size-limit'] ?? 0;
  const params: Record<string, string> = {
    message_size_limit: String(size),
    smtpd_recipient_limit: String(values['smtp-recipient-limit']),
    smtpd_client_connection_rate_limit: String(values['postfix-client-connection-rate-limit']),
  };
  // local(8) and virtual(8) refuse to run when their mailbox limit is below message_size_limit.
  for (const name of ['mailbox_size_limit', 'virtual_mailbox_limit'] as const) {
    if (mailbox[name] !== 0 && mailbox[name] < size) params[name] = String(size);
  }
  return params;
}

export function renderMainCf(current: string, values: LimitValues, mailbox: PostfixMailboxLimits): string {
  return setMainCfParams(current, postfixParams(values, mailbox));
}

/** The brace depth at the start of each line (comments ignored). */
function depths(lines: readonly string[]): number[] {
  const at: number[] = [];
  let depth = 0;
  for (const l of lines) {
    at.push(depth);
    const code = l.replace(/#.*$/, '');
    depth += (code.match(/{/g) ?? []).length - (code.match(/}/g) ?? []).length;
  }
  return at;
}

const topLevelIndex = (lines: readonly string[], key: string): number => {
  const at = depths(lines);
  return lines.findIndex((l, i) => at[i] === 0 && new RegExp(`^\\s*${escape(key)}\\s*=`).test(l));
};

/** Top-level `key = value;` lines of a UCL file replaced, else appended; nested blocks are left alone. */
export function setUclKeys(text: string, keys: Readonly<Record<string, string>>): string {
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  for (const [key, value] of Object.entries(keys)) {
    const line = `${key} = ${value};`;
    const i = topLevelIndex(lines, key);
    if (i < 0) lines.push(line);
    else lines[i] = line;
  }
  return `${lines.join('\n')}\n`;
}

/** Rspamd's local.d files as they are now (empty text when a file does not exist). */
export type RspamdFiles = { 'options.inc': string; 'actions.conf': string; 'greylist.conf': string };

export function rspamdKeys(values: LimitValues): { [F in keyof RspamdFiles]: Record<string, string> } {
  return {
    // Never below Postfix's message_size_limit: the same number, so Rspamd scans whatever Postfix accepts.
    'options.inc': { max_message: String(values['message-size-limit']) },
    'actions.conf': { reject: String(values['spam-score-reject']), add_header: String(values['spam-score-add-header']), greylist: String(values['spam-score-greylist']) },
    'greylist.conf': { timeout: `${values['greylist-delay']}s`, expire: `${values['greylist-expire']}s` },
  };
}

export function renderRspamd(current: RspamdFiles, values: LimitValues): RspamdFiles {
  const keys = rspamdKeys(values);
  return {
    'options.inc': setUclKeys(current['options.inc'], keys['options.inc']),
    'actions.conf': setUclKeys(current['actions.conf'], keys['actions.conf']),
    'greylist.conf': setUclKeys(current['greylist.conf'], keys['greylist.conf']),
  };
}

/** A top-level `key = value;` of UCL text, as written by `setUclKeys`; null when absent. */
export function readUclKey(text: string, key: string): string | null {
  const lines = text.split('\n');
  const line = lines[topLevelIndex(lines, key)];
  if (line === undefined) return null;
  return /=\s*([^;#]+?)\s*;?\s*(#.*)?$/.exec(line)?.[1] ?? null;
}

/** Dovecot `conf.d/99-mailsvc-limits.conf` (mailsvc's own file): the largest message IMAP APPEND and LMTP take, with the quota plugin. */
export function renderDovecot(values: LimitValues): string {
  return ['# Written by `mailsvc limits apply` from the limit message-size-limit; change it there.', 'plugin {', `  quota_max_mail_size = ${values['message-size-limit']}`, '}', ''].join('\n');
}

