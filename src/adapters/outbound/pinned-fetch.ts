/**
 * Any outgoing HTTPS request (GET, POST, PUT, PATCH, DELETE), checked and
 * pinned at connect time like `postJsonPinned`: the origin is judged by the
 * address policy, its host resolved once (through `resolve`: mailsvc's DNS
 * servers when the caller gives them), and the socket may only connect to
 * those addresses. A query string is allowed here (API pagination); the
 * policy judges the origin. No redirect is followed.
 */
import { defaultResolver, evaluateOutboundUrl, type OutboundPolicy, type Resolver } from './address-policy.js';
import { MAX_RESPONSE_BYTES, OutboundRefused, pinnedLookup, readCapped } from './pinned-request.js';

export type PinnedRequest = {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  /** Sent as JSON when given. */
  json?: unknown;
  timeoutMs: number;
  policy: OutboundPolicy;
  resolve?: Resolver;
  /** Extra trusted CA certificates (PEM), besides the system's: a private CA. */
  ca?: readonly string[];
  maxBytes?: number;
};

export type PinnedResponse = { status: number; headers: Record<string, string>; body: string };

export async function requestPinned(url: string, opts: PinnedRequest): Promise<PinnedResponse> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new OutboundRefused('not a valid URL');
  }
  const checked = await evaluateOutboundUrl(`${target.origin}/`, opts.policy, opts.resolve ?? defaultResolver, 'connect');
  if (!checked.ok) throw new OutboundRefused(checked.reason);
  const addresses = checked.addresses;
  if (!addresses || addresses.length === 0) throw new OutboundRefused('host does not resolve');
  const { Agent, request } = await import('undici');
  const { rootCertificates } = await import('node:tls');
  const agent = new Agent({
    connections: 1,
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    connect: {
      timeout: opts.timeoutMs,
      ...(opts.ca ? { ca: [...rootCertificates, ...opts.ca] } : {}),
      ...(checked.literal ? {} : { lookup: pinnedLookup(addresses), servername: checked.host.replace(/\.$/, '') }),
    },
  });
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.json !== undefined) headers['content-type'] = 'application/json';
  try {
    const res = await request(target, {
      method: opts.method,
      dispatcher: agent,
      headers,
      ...(opts.json !== undefined ? { body: JSON.stringify(opts.json) } : {}),
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    const body = await readCapped(res.body, opts.maxBytes ?? MAX_RESPONSE_BYTES);
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
    return { status: res.statusCode, headers: out, body };
  } finally {
    await agent.destroy().catch(() => undefined);
  }
}
