import { ProbeError, readServedCertificate } from '../../adapters/tls-probe/served-certificate.js';
import type { ServedCertificate, TlsPortKind } from '../../adapters/tls-probe/served-certificate.js';

export type { ServedCertificate, TlsPortKind };

/** One port to read: what it speaks and its number. */
export type PortTarget = { kind: TlsPortKind; port: number };

/** What one port served, or why nothing could be read. */
export type PortReading = { kind: TlsPortKind; port: number; served: ServedCertificate | null; error: string | null };

/** Where the prober connects and the name it asks for (SNI). */
export type ProberOptions = { host: string; servername: string; timeoutMs: number };

/** The daemon that serves each kind of port (the one a stale port's restart goes to). */
export const DAEMON_OF: Record<TlsPortKind, 'postfix' | 'dovecot' | 'nginx'> = {
  smtp: 'postfix', submission: 'postfix', smtps: 'postfix', imap: 'dovecot', imaps: 'dovecot', pop3: 'dovecot', pop3s: 'dovecot', https: 'nginx',
};

/**
 * Reads the leaf certificate every port serves, all ports at once, each port
 * once (a port listed twice is read once). Never throws: a port that cannot
 * be read has `error`.
 */
export class TlsProber {
  constructor(readonly opts: ProberOptions) {}

  async readOne(t: PortTarget): Promise<PortReading> {
    try {
      const served = await readServedCertificate({ host: this.opts.host, port: t.port, kind: t.kind, servername: this.opts.servername }, this.opts.timeoutMs);
      return { ...t, served, error: null };
    } catch (err) {
      const why = err instanceof ProbeError ? (err.kind === 'refused' ? `nothing is served on ${this.opts.host}:${t.port}` : err.message) : String(err);
      return { ...t, served: null, error: why };
    }
  }

  async read(targets: readonly PortTarget[]): Promise<PortReading[]> {
    const seen = new Map<string, PortTarget>();
    for (const t of targets) seen.set(`${t.kind}:${t.port}`, t);
    return Promise.all([...seen.values()].map((t) => this.readOne(t)));
  }
}
