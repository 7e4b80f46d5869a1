import { connect as netConnect } from 'node:net';
import type { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { isIP } from 'node:net';
import { STARTTLS_KINDS } from '../../config/doctor-settings.js';
import type { TlsPort } from '../../config/doctor-settings.js';
import type { Finding } from './run.js';

const DAY = 86_400_000;
const SERVES: Record<TlsPort['kind'], string> = { smtp: 'Postfix', submission: 'Postfix', smtps: 'Postfix', imaps: 'Dovecot', pop3s: 'Dovecot', https: 'nginx' };
const RENEW = (k: TlsPort['kind']) => `renew the certificate (certbot renew) and reload ${SERVES[k]}`;

class Refused extends Error {}

/** Reads SMTP replies until a final line (`250 ` …), then answers with the next command. */
function smtpStartTls(sock: Socket, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let step = 0;
    const timer = setTimeout(() => done(new Error(`no SMTP answer within ${ms} ms`)), ms);
    const done = (err?: Error) => {
      clearTimeout(timer);
      sock.off('data', onData);
      if (err) reject(err);
      else resolve();
    };
    const onData = (d: Buffer) => {
      buf += d.toString('latin1');
      if (buf.length > 16_384) return done(new Error('an SMTP answer over 16 KiB'));
      const lines = buf.split('\r\n');
      const final = lines.slice(0, -1).find((l) => /^\d{3} /.test(l));
      if (!final) return;
      const all = lines.slice(0, -1);
      buf = '';
      if (step === 0) {
        if (!final.startsWith('220')) return done(new Error(`the greeting was ${final.slice(0, 80)}`));
        step = 1;
        sock.write('EHLO mailsvc-doctor.invalid\r\n');
      } else if (step === 1) {
        if (!all.some((l) => /^250[- ]STARTTLS/i.test(l))) return done(new Refused('STARTTLS is not offered'));
        step = 2;
        sock.write('STARTTLS\r\n');
      } else {
        if (!final.startsWith('220')) return done(new Refused(`STARTTLS was answered ${final.slice(0, 80)}`));
        done();
      }
    };
    sock.on('data', onData);
  });
}

/** Opens TLS on host:port (after STARTTLS for SMTP) and gives the server's certificate and whether it is trusted for `name`. */
async function fetchCertificate(host: string, port: number, name: string, starttls: boolean, ms: number): Promise<{ cert: PeerCertificate; trusted: boolean; why: string | null }> {
  const plain: Socket | undefined = starttls ? netConnect({ host, port }) : undefined;
  try {
    if (plain) {
      await new Promise<void>((resolve, reject) => {
        plain.once('connect', () => resolve());
        plain.once('error', reject);
      });
      await smtpStartTls(plain, ms);
    }
    const servername = isIP(name) === 0 ? name : undefined;
    const tls: TLSSocket = tlsConnect({ ...(plain ? { socket: plain } : { host, port }), ...(servername ? { servername } : {}), rejectUnauthorized: false });
    try {
      await new Promise<void>((resolve, reject) => {
        tls.once('secureConnect', () => resolve());
        tls.once('error', reject);
      });
      const cert = tls.getPeerCertificate();
      if (!cert || !cert.valid_to) throw new Refused('no certificate was presented');
      const why = tls.authorizationError ? String(tls.authorizationError) : null;
      return { cert, trusted: tls.authorized, why };
    } finally {
      tls.destroy();
    }
  } finally {
    plain?.destroy();
  }
}

/** The certificate served on one port: fail when not served or expired, warn under 14 days or untrusted. */
export async function tlsCheck(p: TlsPort, host: string, name: string, now: number, ms: number): Promise<Finding> {
  const where = `${host}:${p.port}`;
  const starttls = STARTTLS_KINDS.includes(p.kind);
  let got;
  try {
    got = await fetchCertificate(host, p.port, name, starttls, ms);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const notServed = `start ${SERVES[p.kind]} with TLS on port ${p.port}, or leave ${p.kind} out of MAILSVC_DOCTOR_TLS_PORTS if this host does not offer it`;
    if (code === 'ECONNREFUSED') return { status: 'fail', detail: `nothing is served on ${where}`, fix: notServed };
    if (err instanceof Refused) return { status: 'fail', detail: `${where}: ${err.message}`, fix: `configure TLS in ${SERVES[p.kind]} (a certificate and key for ${name})` };
    return { status: 'fail', detail: `no TLS on ${where}: ${(err as Error).message}`, fix: notServed };
  }
  const expires = Date.parse(got.cert.valid_to);
  const days = Math.floor((expires - now) / DAY);
  const subject = got.cert.subject?.CN ?? name;
  const until = new Date(expires).toISOString().slice(0, 10);
  if (expires <= now) return { status: 'fail', detail: `the certificate for ${subject} on ${where} expired on ${until}`, fix: RENEW(p.kind) };
  if (days < 14) return { status: 'warn', detail: `the certificate for ${subject} on ${where} expires in ${days} day${days === 1 ? '' : 's'} (${until})`, fix: RENEW(p.kind) };
  if (!got.trusted) return { status: 'warn', detail: `the certificate for ${subject} on ${where} is not trusted for ${name}: ${got.why ?? 'unknown reason'}`, fix: `serve a certificate for ${name} from a public CA (certbot)` };
  return { status: 'ok', detail: `${subject} on ${where}, valid until ${until} (${days} days)`, fix: null };
}
