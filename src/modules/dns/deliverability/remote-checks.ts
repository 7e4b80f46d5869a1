import { requestPinned } from '../../../adapters/outbound/pinned-fetch.js';
import type { OutboundPolicy, Resolver } from '../../../adapters/outbound/address-policy.js';
import { probeStarttls } from '../../../adapters/smtp/starttls-probe.js';
import type { StarttlsProbe } from '../../../adapters/smtp/starttls-probe.js';
import { DnsUnanswered, fail, pass, unknown } from './types.js';
import type { CheckInput, CheckResult } from './types.js';

export type RemoteDeps = {
  policy: OutboundPolicy;
  /** Names resolved with the run's DNS answers (the same questions, asked once). */
  resolve: Resolver;
  httpsPort: number;
  smtpPort: number;
  timeoutMs: number;
  ca?: readonly string[] | undefined;
  now: () => number;
};

const message = (err: unknown): string => (err instanceof Error ? (err.cause instanceof Error ? `${err.message}: ${err.cause.message}` : err.message) : String(err));
const port = (p: number): string => (p === 443 ? '' : `:${p}`);
const TLS_ERRORS = /certificate|self.signed|unable to verify|altnames|ssl|tls/i;

/** The MTA-STS policy served over HTTPS, with the right version, mode and mx (RFC 8461 §3.2). */
export async function checkMtaStsPolicy(i: CheckInput, d: RemoteDeps): Promise<CheckResult> {
  const [id, name] = ['mta-sts-policy', 'MTA-STS policy over HTTPS'];
  const url = `https://mta-sts.${i.domain}${port(d.httpsPort)}/.well-known/mta-sts.txt`;
  const fix = `Serve the policy of the live bundle (mailsvc dns export-bundle) at ${url}, with a certificate for mta-sts.${i.domain}`;
  let r;
  try {
    r = await requestPinned(url, { method: 'GET', timeoutMs: d.timeoutMs, policy: d.policy, resolve: d.resolve, ca: d.ca });
  } catch (err) {
    const text = message(err);
    if (err instanceof DnsUnanswered || /timeout|ETIMEDOUT|ECONNRESET/i.test(text)) return unknown(id, name, `${url}: ${text}`);
    return fail(id, name, `${url}: ${text}`, TLS_ERRORS.test(text) ? `Give mta-sts.${i.domain} a valid certificate. ${fix}` : fix);
  }
  if (r.status !== 200) return fail(id, name, `${url} answered ${r.status}`, fix);
  if (!/^text\/plain\b/i.test(r.headers['content-type'] ?? '')) return fail(id, name, `${url} is served as ${r.headers['content-type'] ?? 'no type'}, not text/plain`, fix);
  const fields = new Map<string, string[]>();
  for (const line of r.body.split(/\r?\n/)) {
    const m = /^([a-z_]+):\s*(.*?)\s*$/i.exec(line);
    if (m?.[1]) fields.set(m[1].toLowerCase(), [...(fields.get(m[1].toLowerCase()) ?? []), m[2] ?? '']);
  }
  if (fields.get('version')?.[0] !== 'STSv1') return fail(id, name, 'the policy does not say version: STSv1', fix);
  const mode = fields.get('mode')?.[0] ?? '';
  if (!['enforce', 'testing'].includes(mode)) return fail(id, name, `mode: ${mode || 'missing'} (senders ignore it)`, `Set mode: enforce. ${fix}`);
  const mx = fields.get('mx') ?? [];
  const matches = mx.some((p) => (p.startsWith('*.') ? i.mailHost.endsWith(p.slice(1)) && !i.mailHost.slice(0, -p.length + 1).includes('.') : p.toLowerCase() === i.mailHost));
  if (!matches) return fail(id, name, `mx: ${mx.join(', ') || 'none'} does not cover ${i.mailHost}`, `List mx: ${i.mailHost}. ${fix}`);
  if (!/^\d+$/.test(fields.get('max_age')?.[0] ?? '')) return fail(id, name, 'max_age is missing or not a number', fix);
  return pass(id, name, `mode: ${mode}, mx: ${mx.join(', ')}`);
}

/** mailsvc's health endpoint through the mail host's HTTPS front (nginx). */
export async function checkHealth(i: CheckInput, d: RemoteDeps): Promise<CheckResult> {
  const [id, name] = ['https-health', 'HTTPS health endpoint'];
  const url = `https://${i.mailHost}${port(d.httpsPort)}/health`;
  try {
    const r = await requestPinned(url, { method: 'GET', timeoutMs: d.timeoutMs, policy: d.policy, resolve: d.resolve, ca: d.ca });
    if (r.status === 200) return pass(id, name, `${url} answered 200`);
    return fail(id, name, `${url} answered ${r.status}`, 'Check that mailsvc runs and nginx proxies /health to it');
  } catch (err) {
    const text = message(err);
    if (err instanceof DnsUnanswered || /timeout|ETIMEDOUT/i.test(text)) return unknown(id, name, `${url}: ${text}`);
    return fail(id, name, `${url}: ${text}`, TLS_ERRORS.test(text) ? `Give ${i.mailHost} a valid certificate in nginx` : 'Check that nginx listens on 443 and proxies /health to mailsvc');
  }
}

const DAY = 86_400_000;
/** Days before expiry under which the certificate check fails (renewal has clearly stopped). */
export const CERT_MIN_DAYS = 14;

/** What port 25 of the mail host showed: one STARTTLS handshake per run, shared by the certificate and DANE checks. */
export type SmtpProbe = { where: string; probe: StarttlsProbe } | { unresolved: string } | { noAddress: true };

export async function probeSmtp(i: CheckInput, d: RemoteDeps): Promise<SmtpProbe> {
  let addresses: string[];
  try {
    addresses = await d.resolve(i.mailHost);
  } catch (err) {
    return { unresolved: `cannot resolve ${i.mailHost}: ${message(err)}` };
  }
  const address = addresses[0];
  if (address === undefined) return { noAddress: true };
  return { where: `${i.mailHost} (${address}) port ${d.smtpPort}`, probe: await probeStarttls(address, d.smtpPort, i.mailHost, { timeoutMs: d.timeoutMs, ca: d.ca }) };
}

/** SMTP on port 25: STARTTLS offered, the chain trusted, the host name in the certificate, days to expiry. */
export async function checkStarttls(i: CheckInput, d: RemoteDeps, smtp: SmtpProbe): Promise<CheckResult> {
  const [id, name] = ['smtp-starttls', 'SMTP STARTTLS certificate'];
  if ('unresolved' in smtp) return unknown(id, name, smtp.unresolved);
  if ('noAddress' in smtp) return fail(id, name, `${i.mailHost} has no address`, `Publish: ${i.mailHost}. IN A <public IPv4>`);
  const { where, probe: r } = smtp;
  if (!r.ok) {
    if (r.stage === 'timeout' || r.stage === 'connect') return unknown(id, name, `${where}: ${r.detail}`, 'Check that port 25 is open to the internet (the firewall, your provider) and Postfix runs');
    return fail(id, name, `${where}: ${r.stage}: ${r.detail}`, 'Check Postfix\'s smtpd TLS settings (smtpd_tls_cert_file, smtpd_tls_key_file)');
  }
  if (!r.offered) return fail(id, name, `${where} does not offer STARTTLS`, 'Set smtpd_tls_security_level = may and a certificate in Postfix');
  if (!r.authorized) return fail(id, name, `${where}: the certificate chain is not trusted (${r.authorizationError ?? 'unknown reason'})`, 'Install the full chain (fullchain.pem) as smtpd_tls_cert_file');
  if (r.identityError) return fail(id, name, `${where}: ${r.identityError}`, `Use a certificate that names ${i.mailHost}`);
  const days = r.validTo === null ? NaN : Math.floor((Date.parse(r.validTo) - d.now()) / DAY);
  if (!(days >= CERT_MIN_DAYS)) return fail(id, name, `${where}: the certificate expires in ${days} day(s) (${r.validTo})`, 'Renew the certificate (certbot renew) and reload Postfix');
  return pass(id, name, `${where}: ${r.protocol ?? 'TLS'}, issued by ${r.issuer ?? '?'}, ${days} days to expiry`);
}
