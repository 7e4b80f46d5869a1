import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { isIP } from 'node:net';
import { parseDovecotListeners, parseMasterCf } from '../adapters/mail-services.js';
import type { MailService, MailServiceFiles } from '../adapters/mail-services.js';
import { SettingsError } from './settings-error.js';

/** How `mailsvc doctor` reaches what it checks: a TLS port by what it speaks. */
export type TlsKind = 'smtp' | 'submission' | 'smtps' | 'imap' | 'imaps' | 'pop3' | 'pop3s' | 'https';
export type TlsPort = { kind: TlsKind; port: number };

/** The kinds that start in plain text and switch with STARTTLS (SMTP, IMAP, POP3's STLS); the others speak TLS at once. */
export const STARTTLS_KINDS: readonly TlsKind[] = ['smtp', 'submission', 'imap', 'pop3'];
const KINDS: readonly TlsKind[] = ['smtp', 'submission', 'smtps', 'imap', 'imaps', 'pop3', 'pop3s', 'https'];
/** The ports read when MAILSVC_DOCTOR_TLS_PORTS is unset and the listener files cannot be read: mailsvc's own deploy/ files (no POP3). */
export const DEFAULT_TLS_PORTS = 'smtp:25,submission:587,smtps:465,imaps:993,https:443';

const KIND_OF: Record<MailService['protocol'], Record<MailService['security'], TlsKind>> = {
  submission: { tls: 'smtps', starttls: 'submission' },
  imap: { tls: 'imaps', starttls: 'imap' },
  pop3: { tls: 'pop3s', starttls: 'pop3' },
};

/**
 * The ports the installed daemons offer, as the autoconfiguration answers
 * name them (the same files, MAILSVC_POSTFIX_MASTER_CF and
 * MAILSVC_DOVECOT_LISTENERS_CONF): smtp:25, each submission service, each
 * IMAP and POP3 listener that is not `port = 0`, and https:443. Null when a
 * file cannot be read or parsed.
 */
export function listenerTlsPorts(files: MailServiceFiles): TlsPort[] | null {
  try {
    const submission = parseMasterCf(readFileSync(files.postfixMasterCf, 'utf8'));
    const { imap, pop3 } = parseDovecotListeners(readFileSync(files.dovecotListeners, 'utf8'));
    const offered = [...submission, ...imap, ...pop3].map((m): TlsPort => ({ kind: KIND_OF[m.protocol][m.security], port: m.port }));
    return [{ kind: 'smtp', port: 25 }, ...offered, { kind: 'https', port: 443 }];
  } catch {
    return null;
  }
}

export type DoctorSettings = Readonly<{
  /** MAILSVC_DOCTOR_TIMEOUT_MS: each check's own time limit. */
  timeoutMs: number;
  /** MAILSVC_DOCTOR_TLS_HOST: where the certificates are fetched (an address or the mail host name). */
  tlsHost: string;
  /** MAILSVC_DOCTOR_TLS_NAME: the name asked for (SNI) and checked against the certificate (default: this host's name). */
  tlsName: string;
  /**
   * MAILSVC_DOCTOR_TLS_PORTS: `<kind>:<port>` items, or `off`: the ports the
   * doctor, `mailsvc tls check` and a deploy's proof read (docs/tls.md).
   * Unset: the ports the daemons' listener files offer (`listenerTlsPorts`).
   */
  tlsPorts: readonly TlsPort[];
  /** MAILSVC_TLS_SETTLE_MS: how long a deploy's proof reads a port that still serves the old certificate before it counts as stale (docs/tls.md). */
  tlsSettleMs: number;
}>;

type Source = Record<string, string | undefined>;
const val = (src: Source, key: string): string | undefined => (src[key] === undefined || src[key] === '' ? undefined : src[key]);

export function parseTlsPorts(raw: string): TlsPort[] {
  if (raw === 'off') return [];
  return raw.split(/[\s,]+/).filter(Boolean).map((item) => {
    const m = /^([a-z0-9]+):(\d{1,5})$/.exec(item);
    const kind = m?.[1] as TlsKind | undefined;
    const port = Number(m?.[2] ?? 0);
    if (!kind || !KINDS.includes(kind) || port < 1 || port > 65535) {
      throw new SettingsError('MAILSVC_DOCTOR_TLS_PORTS', `"${item.slice(0, 40)}" is not <kind>:<port> with a kind of ${KINDS.join(', ')} (or off)`);
    }
    return { kind, port };
  });
}

/** `listeners`: the files the default ports are read from (the autoconfiguration's); without them, DEFAULT_TLS_PORTS. */
export function loadDoctorSettings(src: Source, listeners?: MailServiceFiles): DoctorSettings {
  const ms = val(src, 'MAILSVC_DOCTOR_TIMEOUT_MS') ?? '5000';
  const timeoutMs = /^\d+$/.test(ms) ? Number(ms) : NaN;
  if (!(timeoutMs >= 100 && timeoutMs <= 120_000)) throw new SettingsError('MAILSVC_DOCTOR_TIMEOUT_MS', `must be a whole number from 100 to 120000, got "${ms.slice(0, 40)}"`);
  const host = val(src, 'MAILSVC_DOCTOR_TLS_HOST') ?? '127.0.0.1';
  if (isIP(host) === 0 && !/^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/i.test(host)) throw new SettingsError('MAILSVC_DOCTOR_TLS_HOST', 'must be an address or a host name');
  const name = val(src, 'MAILSVC_DOCTOR_TLS_NAME') ?? hostname();
  if (!/^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/i.test(name)) throw new SettingsError('MAILSVC_DOCTOR_TLS_NAME', 'must be a host name');
  const settle = val(src, 'MAILSVC_TLS_SETTLE_MS') ?? '5000';
  const tlsSettleMs = /^\d+$/.test(settle) ? Number(settle) : NaN;
  if (!(tlsSettleMs >= 500 && tlsSettleMs <= 120_000)) throw new SettingsError('MAILSVC_TLS_SETTLE_MS', `must be a whole number from 500 to 120000, got "${settle.slice(0, 40)}"`);
  const given = val(src, 'MAILSVC_DOCTOR_TLS_PORTS');
  const tlsPorts = given !== undefined ? parseTlsPorts(given) : ((listeners && listenerTlsPorts(listeners)) ?? parseTlsPorts(DEFAULT_TLS_PORTS));
  return Object.freeze({ timeoutMs, tlsHost: host, tlsName: name, tlsPorts, tlsSettleMs });
}
