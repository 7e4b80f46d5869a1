import { ProbeError, readServedCertificate } from '../../adapters/tls-probe/served-certificate.js';
import type { ServedCertificate } from '../../adapters/tls-probe/served-certificate.js';
import type { TlsPort } from '../../config/doctor-settings.js';
import type { Finding } from './run.js';

const DAY = 86_400_000;
const SERVES: Record<TlsPort['kind'], string> = { smtp: 'Postfix', submission: 'Postfix', smtps: 'Postfix', imap: 'Dovecot', imaps: 'Dovecot', pop3: 'Dovecot', pop3s: 'Dovecot', https: 'nginx' };
const RENEW = (k: TlsPort['kind']) => `renew the certificate (certbot renew) and reload ${SERVES[k]}`;

/** The certificate served on one port: fail when not served or expired, warn under 14 days or untrusted. */
export async function tlsCheck(p: TlsPort, host: string, name: string, now: number, ms: number): Promise<Finding> {
  const where = `${host}:${p.port}`;
  let got: ServedCertificate;
  try {
    got = await readServedCertificate({ host, port: p.port, kind: p.kind, servername: name }, ms);
  } catch (err) {
    const notServed = `start ${SERVES[p.kind]} with TLS on port ${p.port}, or leave ${p.kind} out of MAILSVC_DOCTOR_TLS_PORTS if this host does not offer it`;
    const kind = err instanceof ProbeError ? err.kind : 'tls';
    if (kind === 'refused') return { status: 'fail', detail: `nothing is served on ${where}`, fix: notServed };
    if (kind === 'starttls') return { status: 'fail', detail: `${where}: ${(err as Error).message}`, fix: `configure TLS in ${SERVES[p.kind]} (a certificate and key for ${name})` };
    return { status: 'fail', detail: `no TLS on ${where}: ${(err as Error).message}`, fix: notServed };
  }
  const expires = got.notAfter;
  const days = Math.floor((expires - now) / DAY);
  const subject = /(?:^|, )CN=([^,]+)/.exec(got.subject)?.[1] ?? name;
  const until = new Date(expires).toISOString().slice(0, 10);
  if (expires <= now) return { status: 'fail', detail: `the certificate for ${subject} on ${where} expired on ${until}`, fix: RENEW(p.kind) };
  if (days < 14) return { status: 'warn', detail: `the certificate for ${subject} on ${where} expires in ${days} day${days === 1 ? '' : 's'} (${until})`, fix: RENEW(p.kind) };
  if (!got.trusted) return { status: 'warn', detail: `the certificate for ${subject} on ${where} is not trusted for ${name}: ${got.untrustedBecause ?? 'unknown reason'}`, fix: `serve a certificate for ${name} from a public CA (certbot)` };
  return { status: 'ok', detail: `${subject} on ${where}, valid until ${until} (${days} days)`, fix: null };
}
