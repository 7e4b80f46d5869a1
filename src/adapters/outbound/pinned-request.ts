/**
 * One outgoing JSON POST, checked and pinned at connect time.
 *
 * The URL is checked again, the host is resolved exactly once, and the socket
 * may only connect to the addresses that were judged (no DNS-rebinding window).
 * TLS verification stays on against the original host name. Redirects are not
 * followed: a 3xx is returned to the caller like any other status.
 */
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { defaultResolver, evaluateOutboundUrl, type OutboundPolicy, type Resolver } from './address-policy.js';

/** The outgoing call was refused by the address policy; `message` is the short reason. */
export class OutboundRefused extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'OutboundRefused';
  }
}

export const MAX_RESPONSE_BYTES = 64 * 1024;

export type PostJsonOptions = {
  headers: Record<string, string>;
  body: unknown;
  timeoutMs: number;
  policy: OutboundPolicy;
  resolve?: Resolver;
};

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for net/tls that answers only with the already-checked addresses. */
export function pinnedLookup(addresses: readonly string[]) {
  const pinned: LookupAddress[] = addresses.map((address) => ({ address, family: isIP(address) }));
  return (_hostname: string, options: LookupOptions | number | undefined, callback: LookupCallback): void => {
    const opts: LookupOptions = typeof options === 'number' ? { family: options } : (options ?? {});
    const family = opts.family === 'IPv4' ? 4 : opts.family === 'IPv6' ? 6 : (opts.family ?? 0);
    const usable = family === 4 || family === 6 ? pinned.filter((a) => a.family === family) : pinned;
    const first = usable[0];
    if (!first) {
      const err: NodeJS.ErrnoException = new Error('no pinned address for the requested family');
      err.code = 'ENOTFOUND';
      process.nextTick(callback, err, '', undefined);
      return;
    }
    if (opts.all === true) process.nextTick(callback, null, usable.map((a) => ({ ...a })));
    else process.nextTick(callback, null, first.address, first.family);
  };
}

export async function readCapped(body: AsyncIterable<Buffer | Uint8Array>, cap: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = Buffer.from(chunk);
    chunks.push(buf);
    size += buf.length;
    if (size >= cap) break; // leaving the loop destroys the stream
  }
  return Buffer.concat(chunks).subarray(0, cap).toString('utf8');
}

/**
 * POST `body` as JSON to `url`. Throws OutboundRefused when the address policy
 * refuses the URL or what its host resolves to now; other failures (lookup,
 * connect, TLS, timeout) are thrown as they come.
 */
export async function postJsonPinned(url: string, opts: PostJsonOptions): Promise<{ status: number; body: string }> {
  const checked = await evaluateOutboundUrl(url, opts.policy, opts.resolve ?? defaultResolver, 'connect');
  if (!checked.ok) throw new OutboundRefused(checked.reason);
  const addresses = checked.addresses;
  if (!addresses || addresses.length === 0) throw new OutboundRefused('host does not resolve');

  const timeoutMs = opts.timeoutMs;
  // undici (over a hundred modules) is loaded by the first outbound call, not at every start.
  const { Agent, request } = await import('undici');
  const agent = new Agent({
    connections: 1,
    pipelining: 1,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    connect: {
      timeout: timeoutMs,
      // A literal IP needs no lookup and carries no SNI (undici omits it for IPs).
      ...(checked.literal ? {} : { lookup: pinnedLookup(addresses), servername: checked.host.replace(/\.$/, '') }),
    },
  });

  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(opts.headers)) {
    if (name.toLowerCase() !== 'content-type') headers[name] = value;
  }
  headers['content-type'] = 'application/json';

  try {
    const res = await request(checked.url, {
      method: 'POST',
      dispatcher: agent,
      headers,
      body: JSON.stringify(opts.body),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await readCapped(res.body, MAX_RESPONSE_BYTES);
    return { status: res.statusCode, body: text };
  } finally {
    await agent.destroy().catch(() => undefined);
  }
}
