import { readFile } from 'node:fs/promises';

/**
 * What Postfix and Dovecot serve to mail clients, read from their
 * configuration files (the ones mailsvc ships in deploy/, or the installed
 * copies): the autoconfiguration answers and the DNS plan's SRV records are
 * built from this, so a port or a TLS mode is written in one place only.
 *
 * - Postfix: every `inet` service of master.cf that runs smtpd with
 *   `smtpd_sasl_auth_enable=yes` is a submission service. With
 *   `smtpd_tls_wrappermode=yes` it speaks TLS at once (RFC 8314 implicit TLS,
 *   "SSL" in the clients' words); with `smtpd_tls_security_level=encrypt` it
 *   demands STARTTLS. Any other (plain text allowed) is not offered to clients.
 * - Dovecot: the `inet_listener` blocks of `service imap-login` and
 *   `service pop3-login`; a listener with `ssl = yes` is implicit TLS, one
 *   without is STARTTLS (Dovecot refuses plain-text logins on it unless TLS is
 *   used, `disable_plaintext_auth`), and `port = 0` is not offered.
 */

export type Security = 'tls' | 'starttls';
export type MailProtocol = 'imap' | 'pop3' | 'submission';
export type MailService = { protocol: MailProtocol; port: number; security: Security };

/** Offered services, implicit TLS first (RFC 8314 §3), then by port. */
export type MailServices = { imap: MailService[]; pop3: MailService[]; submission: MailService[] };

/** The services /etc/services names for the ports a submission service may listen on. */
const SERVICE_PORTS: Readonly<Record<string, number>> = { submission: 587, submissions: 465, smtps: 465, smtp: 25 };

export class MailServicesError extends Error {}

const byPreference = (a: MailService, b: MailService): number => (a.security === b.security ? a.port - b.port : a.security === 'tls' ? -1 : 1);

function portOf(field: string): number | null {
  const port = field.includes(':') ? field.slice(field.lastIndexOf(':') + 1) : field;
  if (/^\d{1,5}$/.test(port)) {
    const n = Number(port);
    return n >= 1 && n <= 65535 ? n : null;
  }
  return SERVICE_PORTS[port] ?? null;
}

/** master.cf's logical lines: comments dropped, continuation lines (leading whitespace) joined. */
function logicalLines(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    if (/^\s*#/.test(raw) || raw.trim() === '') continue;
    if (/^\s/.test(raw) && out.length > 0) out[out.length - 1] += ` ${raw.trim()}`;
    else out.push(raw.trim());
  }
  return out;
}

/** The submission services of a master.cf text. */
export function parseMasterCf(text: string): MailService[] {
  const out: MailService[] = [];
  for (const line of logicalLines(text)) {
    const fields = line.split(/\s+/);
    const [service, type, , , , , , command] = fields;
    if (type !== 'inet' || command !== 'smtpd' || service === undefined) continue;
    const opts = new Map<string, string>();
    for (let i = 8; i < fields.length; i++) {
      if (fields[i] !== '-o') continue;
      const kv = fields[i + 1] ?? '';
      const eq = kv.indexOf('=');
      if (eq > 0) opts.set(kv.slice(0, eq), kv.slice(eq + 1));
    }
    if (opts.get('smtpd_sasl_auth_enable') !== 'yes') continue;
    const port = portOf(service);
    if (port === null) throw new MailServicesError(`master.cf: service "${service}" names no port`);
    if (opts.get('smtpd_tls_wrappermode') === 'yes') out.push({ protocol: 'submission', port, security: 'tls' });
    else if (opts.get('smtpd_tls_security_level') === 'encrypt') out.push({ protocol: 'submission', port, security: 'starttls' });
  }
  return out.sort(byPreference);
}

type Block = { name: string; settings: Map<string, string>; children: Block[] };

/** Dovecot's configuration syntax, as far as this needs: `name [arg] {`, `key = value`, `}`, comments. */
function parseDovecotBlocks(text: string): Block {
  const root: Block = { name: '', settings: new Map(), children: [] };
  const stack = [root];
  for (const raw of text.split('\n')) {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (line === '') continue;
    const top = stack[stack.length - 1] ?? root;
    const open = /^([a-z_][a-z0-9_-]*(?:\s+[^\s{]+)?)\s*\{$/i.exec(line);
    if (open?.[1]) {
      const block: Block = { name: open[1].replace(/\s+/g, ' '), settings: new Map(), children: [] };
      top.children.push(block);
      stack.push(block);
      continue;
    }
    if (line === '}') {
      if (stack.length === 1) throw new MailServicesError('dovecot: a "}" without its block');
      stack.pop();
      continue;
    }
    const kv = /^([a-z_][a-z0-9_]*)\s*=\s*(.*)$/i.exec(line);
    if (kv?.[1] !== undefined) top.settings.set(kv[1], kv[2] ?? '');
  }
  if (stack.length !== 1) throw new MailServicesError('dovecot: a block is not closed');
  return root;
}

/** The IMAP and POP3 listeners of a Dovecot configuration text (later blocks win, as in Dovecot). */
export function parseDovecotListeners(text: string): { imap: MailService[]; pop3: MailService[] } {
  const root = parseDovecotBlocks(text);
  const out = { imap: [] as MailService[], pop3: [] as MailService[] };
  for (const protocol of ['imap', 'pop3'] as const) {
    const listeners = new Map<string, { port: number; ssl: boolean }>();
    for (const service of root.children.filter((b) => b.name === `service ${protocol}-login`)) {
      for (const l of service.children.filter((b) => b.name.startsWith('inet_listener '))) {
        const port = l.settings.get('port');
        if (port === undefined || !/^\d{1,5}$/.test(port) || Number(port) > 65535) throw new MailServicesError(`dovecot: ${l.name} of ${service.name} needs a port (0 for off)`);
        listeners.set(l.name, { port: Number(port), ssl: l.settings.get('ssl') === 'yes' });
      }
    }
    for (const { port, ssl } of listeners.values()) if (port > 0) out[protocol].push({ protocol, port, security: ssl ? 'tls' : 'starttls' });
    out[protocol].sort(byPreference);
  }
  return out;
}

export type MailServiceFiles = { postfixMasterCf: string; dovecotListeners: string };

/** Reads both files; a missing or unreadable file, or one that offers no IMAP or no submission, is an error naming it. */
export async function readMailServices(files: MailServiceFiles): Promise<MailServices> {
  const read = (path: string) => readFile(path, 'utf8').catch((err: unknown) => {
    throw new MailServicesError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  });
  const [master, dovecot] = await Promise.all([read(files.postfixMasterCf), read(files.dovecotListeners)]);
  const submission = parseMasterCf(master);
  const { imap, pop3 } = parseDovecotListeners(dovecot);
  if (submission.length === 0) throw new MailServicesError(`${files.postfixMasterCf} has no submission service with TLS and SMTP AUTH`);
  if (imap.length === 0) throw new MailServicesError(`${files.dovecotListeners} has no IMAP listener`);
  return { imap, pop3, submission };
}
