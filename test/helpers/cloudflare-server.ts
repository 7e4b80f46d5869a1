import { createServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';

/**
 * A local HTTPS server speaking the DNS part of Cloudflare API v4 under
 * /client/v4: GET /zones/{id}; /zones/{id}/dns_records list (page, per_page,
 * type, name filters, result_info), create, update (PUT), delete; Bearer
 * tokens; the {success, errors, messages, result} envelope with Cloudflare's
 * error codes; 429 with Retry-After on demand. Every change is handed to
 * `onChange` (the test writes it into knot, closing the loop).
 */
export type FakeRecord = { id: string; type: string; name: string; content: string; ttl: number; proxied: boolean; comment: string | null };
export type FakeCloudflare = {
  baseUrl: string;
  port: number;
  records: FakeRecord[];
  requests: string[];
  /** The next n requests are answered 429. */
  rateLimitNext: number;
  close(): Promise<void>;
};
type Change = { op: 'create' | 'update' | 'delete'; before: FakeRecord | null; after: FakeRecord | null };

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};
const fail = (res: ServerResponse, status: number, code: number, message: string) => send(res, status, { success: false, errors: [{ code, message }], messages: [], result: null });
const ok = (res: ServerResponse, result: unknown, extra: Record<string, unknown> = {}) => send(res, 200, { success: true, errors: [], messages: [], result, ...extra });

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  let text = '';
  for await (const c of req) text += String(c);
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** TXT content as Cloudflare's resolvers would serve it: every quoted string at most 255 bytes. */
const txtStringsOk = (content: string) => !content.startsWith('"') ? Buffer.byteLength(content) <= 255 : [...content.matchAll(/"((?:[^"\\]|\\.)*)"/g)].every((m) => Buffer.byteLength(m[1] ?? '') <= 255);

export async function startFakeCloudflare(tls: { cert: string; key: string }, zone: { id: string; name: string; token: string }, onChange: (c: Change) => Promise<void> = async () => undefined): Promise<FakeCloudflare> {
  const state = { records: [] as FakeRecord[], requests: [] as string[], rateLimitNext: 0 };
  const server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'https://x');
      state.requests.push(`${req.method} ${url.pathname}${url.search}`);
      if (state.rateLimitNext > 0) {
        state.rateLimitNext -= 1;
        return fail(res, 429, 971, 'Please wait and consider throttling your request speed');
      }
      if (req.headers.authorization !== `Bearer ${zone.token}`) return fail(res, 403, 10000, 'Authentication error');
      const m = /^\/client\/v4\/zones\/([^/]+)(\/dns_records(?:\/([^/]+))?)?$/.exec(url.pathname);
      if (!m || m[1] !== zone.id) return fail(res, 404, 7003, `Could not route to ${url.pathname}, perhaps your object identifier is invalid?`);
      if (!m[2]) return req.method === 'GET' ? ok(res, { id: zone.id, name: zone.name, status: 'active' }) : fail(res, 405, 10405, 'Method not allowed');
      const id = m[3];
      if (req.method === 'GET' && !id) {
        const page = Number(url.searchParams.get('page') ?? 1);
        const per = Math.min(Number(url.searchParams.get('per_page') ?? 100), 5000);
        const type = url.searchParams.get('type');
        const name = url.searchParams.get('name');
        const all = state.records.filter((r) => (!type || r.type === type) && (!name || r.name === name));
        const total_pages = Math.max(1, Math.ceil(all.length / per));
        return ok(res, all.slice((page - 1) * per, page * per), { result_info: { page, per_page: per, count: Math.min(per, Math.max(0, all.length - (page - 1) * per)), total_count: all.length, total_pages } });
      }
      if (req.method === 'POST' && !id) {
        const b = await body(req);
        // Structured types (TLSA) come as `data`; Cloudflare renders their content ("3 1 1 <hex>").
        const d = b.data as { usage?: unknown; selector?: unknown; matching_type?: unknown; certificate?: unknown } | undefined;
        if (b.type === 'TLSA') {
          if (!d || ![d.usage, d.selector, d.matching_type].every((x) => Number.isInteger(x)) || typeof d.certificate !== 'string' || !/^[0-9a-fA-F]+$/.test(d.certificate)) return fail(res, 400, 9101, 'TLSA record requires data: usage, selector, matching_type, certificate');
          b.content = `${String(d.usage)} ${String(d.selector)} ${String(d.matching_type)} ${d.certificate}`;
        }
        if (typeof b.content !== 'string' || typeof b.name !== 'string' || typeof b.type !== 'string') return fail(res, 400, 9000, 'DNS name, type and content are required');
        if (b.type === 'TXT' && !txtStringsOk(b.content)) return fail(res, 400, 9005, 'Content for TXT record is invalid: a string is longer than 255 characters');
        const rec: FakeRecord = { id: randomBytes(16).toString('hex'), type: b.type, name: b.name, content: b.content, ttl: Number(b.ttl ?? 1), proxied: b.proxied === true, comment: typeof b.comment === 'string' ? b.comment : null };
        state.records.push(rec);
        await onChange({ op: 'create', before: null, after: rec });
        return ok(res, rec);
      }
      const i = state.records.findIndex((r) => r.id === id);
      if (i < 0) return fail(res, 404, 81044, 'Record does not exist.');
      const before = state.records[i]!;
      if (req.method === 'PUT') {
        const b = await body(req);
        if (typeof b.content !== 'string') return fail(res, 400, 9000, 'content is required');
        if (before.type === 'TXT' && !txtStringsOk(b.content)) return fail(res, 400, 9005, 'Content for TXT record is invalid');
        const after: FakeRecord = { ...before, content: b.content, ttl: Number(b.ttl ?? before.ttl), proxied: b.proxied === true, comment: typeof b.comment === 'string' ? b.comment : null };
        state.records[i] = after;
        await onChange({ op: 'update', before, after });
        return ok(res, after);
      }
      if (req.method === 'DELETE') {
        state.records.splice(i, 1);
        await onChange({ op: 'delete', before, after: null });
        return ok(res, { id: before.id });
      }
      return fail(res, 405, 10405, 'Method not allowed');
    })().catch((err: unknown) => fail(res, 500, 10001, String(err)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return {
    baseUrl: `https://127.0.0.1:${port}/client/v4`,
    port,
    get records() { return state.records; },
    set records(v) { state.records = v; },
    get requests() { return state.requests; },
    get rateLimitNext() { return state.rateLimitNext; },
    set rateLimitNext(n) { state.rateLimitNext = n; },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
