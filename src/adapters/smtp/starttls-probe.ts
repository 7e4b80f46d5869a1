import { connect as netConnect } from 'node:net';
import type { Socket } from 'node:net';
import { checkServerIdentity, connect as tlsConnect, rootCertificates } from 'node:tls';
import type { DetailedPeerCertificate, PeerCertificate } from 'node:tls';

/** What a STARTTLS handshake showed; `error` when the server could not be talked to. */
export type StarttlsProbe =
  | {
      ok: true;
      offered: boolean;
      authorized: boolean;
      authorizationError: string | null;
      identityError: string | null;
      validTo: string | null;
      subject: string | null;
      issuer: string | null;
      protocol: string | null;
      /** The certificates the server sent, DER, the leaf first (what DANE matches). */
      chain: Buffer[];
    }
  | { ok: false; stage: 'connect' | 'greeting' | 'ehlo' | 'starttls' | 'tls' | 'timeout'; detail: string };

/** The DER certificates of a detailed peer certificate, leaf first, up to where the issuer is itself. */
function chainOf(leaf: DetailedPeerCertificate): Buffer[] {
  const out: Buffer[] = [];
  const seen = new Set<DetailedPeerCertificate>();
  for (let c: DetailedPeerCertificate | undefined = leaf; c?.raw && !seen.has(c); c = c.issuerCertificate) {
    seen.add(c);
    out.push(c.raw);
  }
  return out;
}

/**
 * Connects to `address:port`, reads the greeting, says EHLO, asks STARTTLS and
 * completes the TLS handshake for `hostName` (SNI and the name checked), the
 * way a sending MTA does. Trust: the system's roots plus `ca`. Nothing is sent
 * after the handshake but QUIT.
 */
export function probeStarttls(address: string, port: number, hostName: string, opts: { timeoutMs?: number; ca?: readonly string[]; ehloName?: string } = {}): Promise<StarttlsProbe> {
  return new Promise((resolve) => {
    let done = false;
    let socket: Socket | undefined;
    const finish = (r: StarttlsProbe): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket?.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish({ ok: false, stage: 'timeout', detail: `no answer from ${address}:${port} within ${opts.timeoutMs ?? 10_000} ms` }), opts.timeoutMs ?? 10_000);
    let buffer = '';
    let stage: 'greeting' | 'ehlo' | 'starttls' = 'greeting';
    const ehloLines: string[] = [];
    const plain = netConnect({ host: address, port });
    socket = plain;
    plain.setEncoding('utf8');
    plain.on('error', (err) => finish({ ok: false, stage: stage === 'greeting' ? 'connect' : stage, detail: err.message }));
    plain.on('data', (chunk: string) => {
      buffer += chunk;
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, '');
        buffer = buffer.slice(nl + 1);
        const code = line.slice(0, 3);
        const last = line[3] !== '-';
        if (stage === 'greeting') {
          if (!last) continue;
          if (code !== '220') return finish({ ok: false, stage, detail: `greeting: ${line}` });
          stage = 'ehlo';
          plain.write(`EHLO ${opts.ehloName ?? 'mailsvc-check.invalid'}\r\n`);
        } else if (stage === 'ehlo') {
          ehloLines.push(line.slice(4).toUpperCase());
          if (!last) continue;
          if (code !== '250') return finish({ ok: false, stage, detail: `EHLO: ${line}` });
          if (!ehloLines.some((l) => l.split(' ')[0] === 'STARTTLS')) {
            plain.write('QUIT\r\n');
            return finish({ ok: true, offered: false, authorized: false, authorizationError: null, identityError: null, validTo: null, subject: null, issuer: null, protocol: null, chain: [] });
          }
          stage = 'starttls';
          plain.write('STARTTLS\r\n');
        } else {
          if (!last) continue;
          if (code !== '220') return finish({ ok: false, stage, detail: `STARTTLS: ${line}` });
          plain.removeAllListeners('data');
          // Extra CAs add to the system's roots; without them Node's default store (NODE_EXTRA_CA_CERTS included) is used.
          const secure = tlsConnect({ socket: plain, servername: hostName, rejectUnauthorized: false, ...(opts.ca ? { ca: [...rootCertificates, ...opts.ca] } : {}) });
          socket = secure;
          secure.on('error', (err) => finish({ ok: false, stage: 'tls', detail: err.message }));
          secure.once('secureConnect', () => {
            const cert: PeerCertificate = secure.getPeerCertificate();
            const identity = cert && Object.keys(cert).length ? checkServerIdentity(hostName, cert) : new Error('no certificate');
            const err = secure.authorizationError;
            secure.write('QUIT\r\n');
            finish({
              ok: true,
              offered: true,
              authorized: secure.authorized,
              authorizationError: err ? String(err instanceof Error ? err.message : err) : null,
              identityError: identity ? identity.message : null,
              validTo: cert.valid_to ?? null,
              subject: cert.subject?.CN ? String(cert.subject.CN) : null,
              issuer: cert.issuer?.CN ? String(cert.issuer.CN) : null,
              protocol: secure.getProtocol(),
              chain: chainOf(secure.getPeerCertificate(true)),
            });
          });
        }
      }
    });
  });
}
