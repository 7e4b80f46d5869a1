import { createHash } from 'node:crypto';
import type { X509Certificate } from 'node:crypto';
import { connect as netConnect, isIP } from 'node:net';
import type { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { TLSSocket } from 'node:tls';

/**
 * What a port speaks before TLS: `smtp` and `submission` (SMTP STARTTLS),
 * `imap` (IMAP STARTTLS), `pop3` (POP3 STLS); `smtps`, `imaps`, `pop3s` and
 * `https` speak TLS at once.
 */
export type TlsPortKind = 'smtp' | 'submission' | 'smtps' | 'imap' | 'imaps' | 'pop3' | 'pop3s' | 'https';
export const TLS_PORT_KINDS: readonly TlsPortKind[] = ['smtp', 'submission', 'smtps', 'imap', 'imaps', 'pop3', 'pop3s', 'https'];
export const STARTTLS_PORT_KINDS: readonly TlsPortKind[] = ['smtp', 'submission', 'imap', 'pop3'];

/** The leaf certificate a port served, as read on the wire. */
export type ServedCertificate = {
  /** SHA-256 of the leaf's DER, lower-case hex without colons. */
  sha256: string;
  /** Epoch milliseconds. */
  notBefore: number;
  notAfter: number;
  subject: string;
  issuer: string;
  /** Whether the chain verified against Node's trust store (NODE_EXTRA_CA_CERTS included) for `servername`. */
  trusted: boolean;
  /** Why it did not verify, else null. */
  untrustedBecause: string | null;
};

/**
 * Why no certificate could be read: `refused` (nothing listens), `starttls`
 * (the plain-text protocol did not offer or accept STARTTLS), `tls` (the
 * handshake failed), `timeout`, `network` (any other socket error).
 */
export type ProbeFailure = 'refused' | 'starttls' | 'tls' | 'timeout' | 'network';

export class ProbeError extends Error {
  constructor(
    readonly kind: ProbeFailure,
    message: string,
  ) {
    super(message);
    this.name = 'ProbeError';
  }
}

export type ProbeTarget = { host: string; port: number; kind: TlsPortKind; /** SNI and the name verified; an IP address sends no SNI. */ servername: string };

/** SHA-256 of a certificate's DER, lower-case hex: what the prover compares. */
export const certificateSha256 = (der: Buffer): string => createHash('sha256').update(der).digest('hex');

/** The first line of a plain-text protocol's dialogue before STARTTLS, per kind. */
type Dialogue = { greeting: RegExp; steps: { send: string; expect: RegExp; refuse: string }[]; multiline: boolean };
const DIALOGUES: Partial<Record<TlsPortKind, Dialogue>> = {
  smtp: { greeting: /^220 /, multiline: true, steps: [
    { send: 'EHLO mailsvc-tls-check.invalid\r\n', expect: /^250[ -]STARTTLS\b/im, refuse: 'STARTTLS is not offered' },
    { send: 'STARTTLS\r\n', expect: /^220 /m, refuse: 'STARTTLS was refused' },
  ] },
  imap: { greeting: /^\* OK/, multiline: false, steps: [{ send: 'a1 STARTTLS\r\n', expect: /^a1 OK/m, refuse: 'STARTTLS was refused' }] },
  pop3: { greeting: /^\+OK/, multiline: false, steps: [{ send: 'STLS\r\n', expect: /^\+OK/m, refuse: 'STLS was refused' }] },
};
DIALOGUES.submission = DIALOGUES.smtp;

/** An SMTP reply is complete at a line `NNN text`; IMAP and POP3 answers here are one line. */
const complete = (buf: string, multiline: boolean): boolean => {
  const lines = buf.split('\r\n').slice(0, -1);
  if (lines.length === 0) return false;
  return multiline ? lines.some((l) => /^\d{3} /.test(l)) : true;
};

/** Speaks the plain-text part of the protocol until the server agrees to switch to TLS. */
function starttls(sock: Socket, d: Dialogue): Promise<void> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let step = -1;
    const finish = (err?: Error): void => {
      sock.off('data', onData);
      if (err) reject(err);
      else resolve();
    };
    const onData = (chunk: Buffer): void => {
      buf += chunk.toString('latin1');
      if (buf.length > 16_384) return finish(new ProbeError('starttls', 'an answer over 16 KiB'));
      if (!complete(buf, d.multiline)) return;
      const answer = buf;
      buf = '';
      if (step === -1) {
        if (!d.greeting.test(answer)) return finish(new ProbeError('starttls', `the greeting was ${JSON.stringify(answer.split('\r\n')[0]?.slice(0, 80))}`));
      } else {
        const s = d.steps[step];
        if (s && !s.expect.test(answer)) return finish(new ProbeError('starttls', s.refuse));
      }
      step++;
      const next = d.steps[step];
      if (!next) return finish();
      sock.write(next.send);
    };
    sock.on('data', onData);
  });
}

function connected(sock: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    sock.once('connect', () => resolve());
    sock.once('error', reject);
  });
}

function failure(err: unknown): ProbeError {
  if (err instanceof ProbeError) return err;
  const code = (err as NodeJS.ErrnoException).code;
  const msg = err instanceof Error ? err.message : String(err);
  if (code === 'ECONNREFUSED') return new ProbeError('refused', 'nothing listens there');
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new ProbeError('network', msg);
  return new ProbeError('tls', msg);
}

const served = (x509: X509Certificate, tls: TLSSocket): ServedCertificate => ({
  sha256: certificateSha256(x509.raw),
  notBefore: Date.parse(x509.validFrom),
  notAfter: Date.parse(x509.validTo),
  subject: x509.subject.replace(/\n/g, ', '),
  issuer: x509.issuer.replace(/\n/g, ', '),
  trusted: tls.authorized,
  untrustedBecause: tls.authorized ? null : String(tls.authorizationError ?? 'not verified'),
});

/**
 * Connects to one port, speaks its protocol up to TLS (STARTTLS where it
 * starts in plain text), completes the handshake with `servername` as SNI,
 * and gives the leaf certificate served. Nothing is verified to refuse the
 * connection: a stale or untrusted certificate is exactly what the caller
 * wants to see. Rejects with a ProbeError, within `timeoutMs`.
 */
export async function readServedCertificate(t: ProbeTarget, timeoutMs: number): Promise<ServedCertificate> {
  const dialogue = DIALOGUES[t.kind];
  const sockets: Socket[] = [];
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_r, reject) => {
    timer = setTimeout(() => reject(new ProbeError('timeout', `no certificate within ${timeoutMs} ms`)), timeoutMs);
  });
  const work = async (): Promise<ServedCertificate> => {
    const servername = isIP(t.servername) === 0 ? t.servername : undefined;
    let plain: Socket | undefined;
    if (dialogue) {
      plain = netConnect({ host: t.host, port: t.port });
      sockets.push(plain);
      await connected(plain);
      await starttls(plain, dialogue);
    }
    const tls = tlsConnect({ ...(plain ? { socket: plain } : { host: t.host, port: t.port }), ...(servername ? { servername } : {}), rejectUnauthorized: false, ...(t.kind === 'https' ? { ALPNProtocols: ['http/1.1'] } : {}) });
    sockets.push(tls);
    await new Promise<void>((resolve, reject) => {
      tls.once('secureConnect', () => resolve());
      tls.once('error', reject);
    });
    const x509 = tls.getPeerX509Certificate();
    if (!x509) throw new ProbeError('tls', 'no certificate was presented');
    return served(x509, tls);
  };
  try {
    return await Promise.race([work().catch((err: unknown) => Promise.reject(failure(err))), late]);
  } finally {
    clearTimeout(timer);
    // The TLS socket first, then the plain one under it: Node 20 crashes (SIGSEGV) when the socket under a TLS socket is destroyed first.
    for (const s of sockets.reverse()) {
      s.on('error', () => undefined);
      s.destroy();
    }
  }
}
