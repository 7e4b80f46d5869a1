import { Agent } from 'node:https';
import { X509Certificate, createHash } from 'node:crypto';
import { rootCertificates } from 'node:tls';
import type AcmeLib from 'acme-client';
import type { Client } from 'acme-client';

/**
 * The ACME side (RFC 8555) through acme-client: its HTTP instance is shared by
 * every client of the process, so what is set here (trusted CAs, the rate-limit
 * rule) is set once, for all.
 *
 * Rate limits: acme-client would wait out any Retry-After inside one request
 * (hours, for a real rate limit). mailsvc instead waits inline only when the CA
 * asks for at most INLINE_RETRY_MAX_S seconds (once per request); a longer
 * Retry-After ends the attempt with AcmeRateLimited, whose time the service
 * stores as the certificate's next attempt. badNonce is acme-client's own
 * rule: the request is signed again with the fresh nonce of the refusal (up
 * to 5 times).
 */
export const INLINE_RETRY_MAX_S = 10;

export class AcmeRateLimited extends Error {
  constructor(readonly retryAfterSeconds: number, detail: string) {
    super(detail);
  }
}

/** What acme-client's axios hands an error interceptor (only the parts read here). */
type AcmeHttpResponse = { status: number; data: unknown; headers: Record<string, unknown> };
type AcmeHttpError = { config?: { mailsvcRetried?: boolean }; response?: AcmeHttpResponse };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Seconds of a Retry-After header (seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterSeconds(header: unknown, now: number = Date.now()): number | null {
  if (typeof header !== 'string' || header.trim() === '') return null;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

const isRateLimited = (r: AcmeHttpResponse | undefined): boolean => {
  if (!r) return false;
  const type = (r.data as { type?: unknown } | undefined)?.type;
  return r.status === 429 || type === 'urn:ietf:params:acme:error:rateLimited';
};

type Acme = typeof AcmeLib;
const trusted = new Set<string>();
/** How many of `trusted` the HTTPS agent of acme-client's axios was made with. */
let agentTrusts = 0;
let loading: Promise<Acme> | undefined;

/**
 * acme-client, loaded by the first ACME call, not at the service's start: it
 * brings node-forge, axios and @peculiar/x509 (about 1.4 MB of code), which a
 * host that is not issuing a certificate right now does not need in memory.
 */
async function acmeLib(): Promise<Acme> {
  const acme = await (loading ??= import('acme-client').then((m) => {
    install(m.default);
    return m.default;
  }));
  if (trusted.size !== agentTrusts) {
    agentTrusts = trusted.size;
    acme.axios.defaults.httpsAgent = new Agent({ ca: [...rootCertificates, ...trusted], keepAlive: false });
  }
  return acme;
}

function install(acme: Acme): void {
  const inst = acme.axios;
  // Only server errors and lost connections are retried by acme-client; 429 is ours (below).
  const settings = (inst.defaults as unknown as { acmeSettings: { retryMaxAttempts: number; retryDefaultDelay: number } }).acmeSettings;
  settings.retryMaxAttempts = 2;
  settings.retryDefaultDelay = 1;
  inst.interceptors.response.use(undefined, async (error: unknown) => {
    const { config, response } = error as AcmeHttpError;
    // No answer at all (refused, unknown host, TLS not trusted): say so with its code. acme-client's
    // own handler would retry and then fail reading the status of the answer that never came.
    if (config && !response) {
      const code = (error as { code?: string }).code ?? 'ECONNREFUSED';
      throw Object.assign(new Error(`${code}: ${(error as Error).message}`), { code });
    }
    if (!config || !isRateLimited(response)) throw error;
    const seconds = retryAfterSeconds(response?.headers['retry-after']) ?? 60;
    if (seconds <= INLINE_RETRY_MAX_S && !config.mailsvcRetried) {
      config.mailsvcRetried = true;
      await sleep(seconds * 1000);
      return inst.request(config as Parameters<typeof inst.request>[0]);
    }
    const detail = (response?.data as { detail?: unknown } | undefined)?.detail;
    throw new AcmeRateLimited(seconds, `the CA rate-limits this account${typeof detail === 'string' ? ` (${detail.slice(0, 200)})` : ''}`);
  });
  // acme-client's own response interceptor must see what ours let through: ours goes first.
  const handlers = (inst.interceptors.response as unknown as { handlers: unknown[] }).handlers;
  const mine = handlers.pop();
  handlers.unshift(mine);
}

/** Trusts these CAs (PEM) for the ACME server's HTTPS, besides the system's roots (from the next ACME call on). */
export function trustAcmeCa(pems: readonly string[]): void {
  for (const p of pems) trusted.add(p);
}

export type AcmeClientOptions = { directoryUrl: string; accountKey: string; accountUrl?: string | null | undefined };

export async function acmeClient(o: AcmeClientOptions): Promise<Client> {
  const acme = await acmeLib();
  return new acme.Client({
    directoryUrl: o.directoryUrl,
    accountKey: o.accountKey,
    ...(o.accountUrl ? { accountUrl: o.accountUrl } : {}),
    // Challenges are answered locally and checked first: poll soon, not after 5 s.
    backoffAttempts: 30,
    backoffMin: 250,
    backoffMax: 5000,
  });
}

/** acme-client's key and CSR functions. */
export async function acmeCrypto(): Promise<Acme['crypto']> {
  return (await acmeLib()).crypto;
}

/** The directory object (for `renewalInfo`); axios through the same trust. */
export async function directoryOf(url: string): Promise<Record<string, unknown>> {
  const acme = await acmeLib();
  const r = await acme.axios.get<Record<string, unknown>>(url, { timeout: 15_000 });
  if (r.status !== 200 || typeof r.data !== 'object') throw new Error(`the ACME directory answered ${r.status}`);
  return r.data;
}

/**
 * The first PEM block of a chain (the leaf), as acme-client's splitPemChain(…)[0]
 * gives it, without loading acme-client; undefined when there is none.
 */
export function firstPem(chainPem: string): string | undefined {
  return /-----BEGIN ([A-Z0-9 ]+)-----\r?\n[\s\S]*?\r?\n-----END \1-----/.exec(chainPem)?.[0];
}

/** What a certificate PEM (its first, the leaf) says. */
export type CertFacts = { serial: string; sha256: string; notBefore: number; notAfter: number; names: string[]; spkiSha256: string };
export function certFacts(chainPem: string): CertFacts {
  const leaf = firstPem(chainPem);
  if (!leaf) throw new Error('no certificate in the chain');
  const x = new X509Certificate(leaf);
  const names = (x.subjectAltName ?? '').split(/,\s*/).filter((s) => s.startsWith('DNS:')).map((s) => s.slice(4).toLowerCase());
  const spki = x.publicKey.export({ type: 'spki', format: 'der' });
  return {
    serial: x.serialNumber.toLowerCase(),
    sha256: createHash('sha256').update(x.raw).digest('hex'),
    notBefore: Date.parse(x.validFrom),
    notAfter: Date.parse(x.validTo),
    names,
    spkiSha256: createHash('sha256').update(spki).digest('hex'),
  };
}

/** Reads one DER length at `i` (after the tag); gives the length and where the content starts. */
function derLength(buf: Buffer, i: number): { len: number; start: number } {
  const first = buf[i] ?? 0;
  if (first < 0x80) return { len: first, start: i + 1 };
  const n = first & 0x7f;
  let len = 0;
  for (let k = 0; k < n; k++) len = len * 256 + (buf[i + 1 + k] ?? 0);
  return { len, start: i + 1 + n };
}

/**
 * The ARI certificate identifier (RFC 9773 §4.1): base64url of the Authority
 * Key Identifier's keyIdentifier, a dot, base64url of the serial's DER integer
 * bytes. Null when the certificate has no AKI.
 */
export function ariCertId(chainPem: string): string | null {
  const leaf = firstPem(chainPem);
  if (!leaf) return null;
  const x = new X509Certificate(leaf);
  const der = x.raw;
  const oid = Buffer.from([0x06, 0x03, 0x55, 0x1d, 0x23]);
  let i = der.indexOf(oid);
  if (i < 0) return null;
  i += oid.length;
  if (der[i] === 0x01) i += 3; // critical BOOLEAN
  if (der[i] !== 0x04) return null;
  const oct = derLength(der, i + 1);
  if (der[oct.start] !== 0x30) return null;
  const seq = derLength(der, oct.start + 1);
  if (der[seq.start] !== 0x80) return null;
  const kid = derLength(der, seq.start + 1);
  const keyId = der.subarray(kid.start, kid.start + kid.len);
  let serial = Buffer.from(x.serialNumber.length % 2 ? `0${x.serialNumber}` : x.serialNumber, 'hex');
  while (serial.length > 1 && serial[0] === 0 && (serial[1] ?? 0) < 0x80) serial = serial.subarray(1);
  if ((serial[0] ?? 0) >= 0x80) serial = Buffer.concat([Buffer.from([0]), serial]);
  return `${keyId.toString('base64url')}.${serial.toString('base64url')}`;
}

export type RenewalInfo = { start: number; end: number; retryAfterSeconds: number | null };

/** GET renewalInfo/<certID> (RFC 9773); null when the CA offers no ARI. */
export async function fetchRenewalInfo(directoryUrl: string, chainPem: string): Promise<RenewalInfo | null> {
  const dir = await directoryOf(directoryUrl);
  const base = dir.renewalInfo;
  const id = ariCertId(chainPem);
  if (typeof base !== 'string' || id === null) return null;
  const acme = await acmeLib();
  const r = await acme.axios.get<{ suggestedWindow?: { start?: string; end?: string } }>(`${base.replace(/\/+$/, '')}/${id}`, { timeout: 15_000 });
  if (r.status !== 200) return null;
  const start = Date.parse(r.data.suggestedWindow?.start ?? '');
  const end = Date.parse(r.data.suggestedWindow?.end ?? '');
  if (Number.isNaN(start) || Number.isNaN(end) || end < start) return null;
  return { start, end, retryAfterSeconds: retryAfterSeconds(r.headers['retry-after']) };
}
