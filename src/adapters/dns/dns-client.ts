import { Resolver } from 'node:dns/promises';
import type { MxRecord } from 'node:dns';

/** A DNS server, `host:port`. */
export type DnsServer = { host: string; port: number };

/** An answer: the records, none (NXDOMAIN / NODATA: the name has none), or no answer (timeout, refused, SERVFAIL). */
export type DnsAnswer<T> = { kind: 'records'; records: T[] } | { kind: 'none' } | { kind: 'error'; detail: string };

export type RecordType = 'A' | 'AAAA' | 'MX' | 'TXT' | 'NS' | 'PTR' | 'CNAME';
export type RecordOf<T extends RecordType> = T extends 'MX' ? MxRecord : T extends 'TXT' ? string[] : string;

const NONE = new Set(['ENOTFOUND', 'ENODATA']);

const serverString = (s: DnsServer): string => (s.host.includes(':') ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`);

/**
 * DNS queries to given servers (node:dns's c-ares resolver, which takes
 * `host:port` servers: no packet library needed). Empty server list: the
 * system's resolvers. Every query this client sends is counted, so a caller
 * can prove it asked each question once.
 */
export class DnsClient {
  private readonly resolver: Resolver;
  queries = 0;

  constructor(servers: readonly DnsServer[], opts: { timeoutMs?: number; tries?: number } = {}) {
    this.resolver = new Resolver({ timeout: opts.timeoutMs ?? 2000, tries: opts.tries ?? 2 });
    if (servers.length > 0) this.resolver.setServers(servers.map(serverString));
  }

  async query<T extends RecordType>(name: string, type: T): Promise<DnsAnswer<RecordOf<T>>> {
    this.queries += 1;
    try {
      const r = this.resolver;
      const records: unknown[] =
        type === 'A' ? await r.resolve4(name)
        : type === 'AAAA' ? await r.resolve6(name)
        : type === 'MX' ? await r.resolveMx(name)
        : type === 'TXT' ? await r.resolveTxt(name)
        : type === 'NS' ? await r.resolveNs(name)
        : type === 'PTR' ? await r.resolvePtr(name)
        : await r.resolveCname(name);
      return records.length === 0 ? { kind: 'none' } : { kind: 'records', records: records as RecordOf<T>[] };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (NONE.has(code)) return { kind: 'none' };
      return { kind: 'error', detail: `${type} ${name}: ${code || (err instanceof Error ? err.message : String(err))}` };
    }
  }
}
