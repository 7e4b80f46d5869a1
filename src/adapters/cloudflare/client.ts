import { requestPinned } from '../outbound/pinned-fetch.js';
import { OutboundRefused } from '../outbound/pinned-request.js';
import type { OutboundPolicy, Resolver } from '../outbound/address-policy.js';

/** A DNS record as Cloudflare API v4 returns it (the fields mailsvc reads). */
export type CfRecord = { id: string; type: string; name: string; content: string; ttl: number; proxied?: boolean; comment?: string | null };
/** A record to write: `content` for most types; `data` for structured ones such as TLSA (Cloudflare computes their content from it). */
export type CfRecordInput = { type: string; name: string; ttl: number; proxied: boolean; comment: string } & (
  | { content: string }
  | { data: { usage: number; selector: number; matching_type: number; certificate: string } }
);

/** Cloudflare said no (its error envelope), or could not be reached; `status` 0 when no answer came. */
export class CloudflareError extends Error {
  constructor(readonly status: number, message: string, readonly codes: readonly number[] = []) {
    super(message);
    this.name = 'CloudflareError';
  }
}

type Envelope<T> = { success: boolean; errors?: { code: number; message: string }[]; result: T; result_info?: { page: number; total_pages: number } };

export type CloudflareOptions = {
  baseUrl: string;
  token: string;
  policy: OutboundPolicy;
  resolve?: Resolver;
  ca?: readonly string[];
  timeoutMs?: number;
  /** How often a 429 is retried (after Retry-After, at most maxWaitMs each). */
  retries?: number;
  maxWaitMs?: number;
  sleep?: (ms: number) => Promise<void>;
};

const PER_PAGE = 100;

/**
 * Cloudflare API v4, the DNS part: zones and dns_records. Bearer token (never
 * logged: not in any message this throws), JSON through the outbound guard,
 * pagination followed, the error envelope turned into a CloudflareError, and
 * a 429 retried after its Retry-After.
 */
export class CloudflareClient {
  constructor(private readonly o: CloudflareOptions) {}

  private async call<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, json?: unknown): Promise<Envelope<T>> {
    const retries = this.o.retries ?? 3;
    const sleep = this.o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
    for (let attempt = 0; ; attempt++) {
      let res;
      try {
        res = await requestPinned(`${this.o.baseUrl}${path}`, {
          method,
          headers: { authorization: `Bearer ${this.o.token}`, accept: 'application/json' },
          ...(json === undefined ? {} : { json }),
          timeoutMs: this.o.timeoutMs ?? 15_000,
          policy: this.o.policy,
          ...(this.o.resolve ? { resolve: this.o.resolve } : {}),
          ...(this.o.ca ? { ca: this.o.ca } : {}),
          maxBytes: 8 * 1024 * 1024,
        });
      } catch (err) {
        const why = err instanceof OutboundRefused ? `refused by the outgoing-address policy: ${err.message}` : err instanceof Error ? err.message : String(err);
        throw new CloudflareError(0, `cannot reach the Cloudflare API (${why})`);
      }
      if (res.status === 429 && attempt < retries) {
        const wait = Math.min(Number(res.headers['retry-after'] ?? '1') * 1000 || 1000, this.o.maxWaitMs ?? 30_000);
        await sleep(wait);
        continue;
      }
      let body: Envelope<T> | undefined;
      try {
        body = JSON.parse(res.body) as Envelope<T>;
      } catch {
        body = undefined;
      }
      if (res.status === 429) throw new CloudflareError(429, `Cloudflare's rate limit: still 429 after ${retries} retries; try again in a few minutes`);
      if (!body || res.status >= 400 || body.success !== true) {
        const errors = body?.errors ?? [];
        const text = errors.length ? errors.map((e) => `${e.message} (code ${e.code})`).join('; ') : `HTTP ${res.status}`;
        throw new CloudflareError(res.status, text, errors.map((e) => e.code));
      }
      return body;
    }
  }

  async zone(zoneId: string): Promise<{ id: string; name: string }> {
    return (await this.call<{ id: string; name: string }>('GET', `/zones/${encodeURIComponent(zoneId)}`)).result;
  }

  /** Every record of the zone matching the filters, all pages. */
  async listRecords(zoneId: string, filter: { type?: string; name?: string } = {}): Promise<CfRecord[]> {
    const out: CfRecord[] = [];
    for (let page = 1; ; page++) {
      const q = new URLSearchParams({ page: String(page), per_page: String(PER_PAGE), ...(filter.type ? { type: filter.type } : {}), ...(filter.name ? { name: filter.name } : {}) });
      const r = await this.call<CfRecord[]>('GET', `/zones/${encodeURIComponent(zoneId)}/dns_records?${q.toString()}`);
      out.push(...r.result);
      if (!r.result_info || page >= r.result_info.total_pages || r.result.length === 0) return out;
    }
  }

  async createRecord(zoneId: string, input: CfRecordInput): Promise<CfRecord> {
    return (await this.call<CfRecord>('POST', `/zones/${encodeURIComponent(zoneId)}/dns_records`, input)).result;
  }

  async updateRecord(zoneId: string, id: string, input: CfRecordInput): Promise<CfRecord> {
    return (await this.call<CfRecord>('PUT', `/zones/${encodeURIComponent(zoneId)}/dns_records/${encodeURIComponent(id)}`, input)).result;
  }

  async deleteRecord(zoneId: string, id: string): Promise<void> {
    await this.call<{ id: string }>('DELETE', `/zones/${encodeURIComponent(zoneId)}/dns_records/${encodeURIComponent(id)}`);
  }
}
