/**
 * Outgoing GETs under the same rules as pinned-request.ts: the URL is checked
 * against the address policy, the host resolved once, the socket pinned to
 * the judged addresses, TLS verified against the host name, no redirect
 * followed (a 3xx is an error here: a feed that moved must say so in its
 * signed metadata, not by redirecting). The body is capped.
 */
import { createWriteStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { createHash } from 'node:crypto';
import { defaultResolver, evaluateOutboundUrl, type OutboundPolicy, type Resolver } from './address-policy.js';
import { OutboundRefused, pinnedLookup } from './pinned-request.js';

export type GetOptions = {
  policy: OutboundPolicy;
  timeoutMs: number;
  /** The most bytes the body may hold; more is an error. */
  maxBytes: number;
  resolve?: Resolver;
  /** Extra trusted CA certificates (PEM), besides the system's and NODE_EXTRA_CA_CERTS. */
  ca?: string | undefined;
};

/** The server answered, but not with 200, or with a body over the cap. */
export class OutboundHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'OutboundHttpError';
  }
}

async function open(url: string, opts: GetOptions) {
  const checked = await evaluateOutboundUrl(url, opts.policy, opts.resolve ?? defaultResolver, 'connect');
  if (!checked.ok) throw new OutboundRefused(checked.reason);
  const addresses = checked.addresses;
  if (!addresses || addresses.length === 0) throw new OutboundRefused('host does not resolve');
  const { Agent, request } = await import('undici');
  const { rootCertificates } = await import('node:tls');
  const t = opts.timeoutMs;
  const agent = new Agent({
    connections: 1,
    headersTimeout: t,
    bodyTimeout: t,
    connect: {
      timeout: t,
      // A CA given here is added to the system's, never instead of them.
      ...(opts.ca ? { ca: [...rootCertificates, opts.ca] } : {}),
      ...(checked.literal ? {} : { lookup: pinnedLookup(addresses), servername: checked.host.replace(/\.$/, '') }),
    },
  });
  try {
    const res = await request(checked.url, { method: 'GET', dispatcher: agent, headersTimeout: t, bodyTimeout: t, signal: AbortSignal.timeout(t) });
    if (res.statusCode !== 200) {
      await res.body.dump().catch(() => undefined);
      throw new OutboundHttpError(res.statusCode, `${checked.url.href} answered HTTP ${res.statusCode}`);
    }
    const length = Number(res.headers['content-length'] ?? NaN);
    if (Number.isFinite(length) && length > opts.maxBytes) {
      await res.body.dump().catch(() => undefined);
      throw new OutboundHttpError(200, `${checked.url.href} is larger than ${opts.maxBytes} bytes`);
    }
    return { res, agent, href: checked.url.href };
  } catch (err) {
    await agent.destroy().catch(() => undefined);
    throw err;
  }
}

/** GET `url` into memory (at most `maxBytes`). */
export async function getPinned(url: string, opts: GetOptions): Promise<Buffer> {
  const { res, agent, href } = await open(url, opts);
  try {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      const buf = Buffer.from(chunk as Uint8Array);
      size += buf.length;
      if (size > opts.maxBytes) throw new OutboundHttpError(200, `${href} is larger than ${opts.maxBytes} bytes`);
      chunks.push(buf);
    }
    return Buffer.concat(chunks);
  } finally {
    await agent.destroy().catch(() => undefined);
  }
}

/** GET `url` into the file `path` (at most `maxBytes`); returns its size and sha256 (hex). */
export async function downloadPinned(url: string, path: string, opts: GetOptions): Promise<{ bytes: number; sha256: string }> {
  const { res, agent, href } = await open(url, opts);
  const hash = createHash('sha256');
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > opts.maxBytes) return done(new OutboundHttpError(200, `${href} is larger than ${opts.maxBytes} bytes`));
      hash.update(chunk);
      done(null, chunk);
    },
  });
  try {
    await pipeline(res.body, counter, createWriteStream(path, { mode: 0o640 }));
    return { bytes, sha256: hash.digest('hex') };
  } finally {
    await agent.destroy().catch(() => undefined);
  }
}
