import type { Fail2banClient, JailBan } from '../../adapters/fail2ban/client.js';
import { AppError, queryError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import { parseIpNet, parseLooseNet } from '../../shared/ip-net.js';
import type { IpNet } from '../../shared/ip-net.js';
import type { Page } from '../../shared/paging.js';
import type { BanRepository } from './ban.repository.js';
import { whyRefused } from './ban-guard.js';
import type { Protected } from './ban-guard.js';
import type { BanView } from './schema.js';
import { BAN_SORT } from './schema.js';
import type { BanSortField } from './schema.js';
import { sortOf } from '../sort.schema.js';
import type { Sort } from '../sort.schema.js';

/** What a listing keeps: addresses containing `q`, bans held by `jail` (empty: everything). */
export type BanFilter = { q?: string | undefined; jail?: string | undefined };

/** Who asks: their subject for the record, and the address they call from (null when local). */
export type BanCaller = { subject: string; address: string | null };

const invalid = (field: string, message: string): AppError => new AppError('validation', `${field}: ${message}`, { errors: [{ path: field, message }] });

/** The widest networks a manual ban may name. */
const WIDEST = { ipv4: 24, ipv6: 64 } as const;

function canonical(ip: string): string {
  return parseLooseNet(ip)?.text ?? ip;
}

/** IPv4 before IPv6, then by address bytes, then the narrower network first. */
function byAddress(a: BanView, b: BanView): number {
  const x = parseLooseNet(a.ip);
  const y = parseLooseNet(b.ip);
  if (!x || !y) return a.ip.localeCompare(b.ip);
  if (x.kind !== y.kind) return x.kind === 'ipv4' ? -1 : 1;
  const xb = x.addr.toByteArray();
  const yb = y.addr.toByteArray();
  for (let i = 0; i < xb.length; i += 1) if (xb[i] !== yb[i]) return (xb[i] ?? 0) - (yb[i] ?? 0);
  return y.bits - x.bits;
}

/** A time for ordering: null (unknown, or never ends) after every known one. */
const timeOf = (iso: string | null): number => (iso === null ? Infinity : Date.parse(iso));

/** The order `sort` asks for, the address breaking ties (one entry per address, so pages never overlap). */
function bySort(sort: Sort<BanSortField>): (a: BanView, b: BanView) => number {
  const sign = sort.desc ? -1 : 1;
  if (sort.field === 'ip') return (a, b) => sign * byAddress(a, b);
  const field = sort.field;
  return (a, b) => {
    const x = timeOf(a[field]);
    const y = timeOf(b[field]);
    return x === y ? byAddress(a, b) : sign * (x < y ? -1 : 1);
  };
}

export class BanService {
  constructor(
    private readonly f2b: Pick<Fail2banClient, 'jails' | 'bans' | 'ignoreIp' | 'bannedIn' | 'ban' | 'unban'>,
    private readonly repo: BanRepository,
    private readonly clock: Clock,
    private readonly protect: { trustedProxies: readonly string[]; host: () => Protected[] },
  ) {}

  /**
   * Every banned address, one entry merging all the jails that hold it, by
   * address or as `sort` says. fail2ban keeps the bans, not the database, so
   * they are ordered here.
   */
  async listAll(sort?: string, filter: BanFilter = {}): Promise<BanView[]> {
    const order = sortOf(sort, BAN_SORT);
    const q = filter.q?.trim().toLowerCase();
    if (q !== undefined && !/^[0-9a-f.:/]{0,64}$/.test(q)) throw queryError('q', 'hex digits, dots, colons and / only (part of an address or network)');
    const jail = filter.jail?.trim();
    if (jail !== undefined && jail !== '' && !/^[A-Za-z0-9_.@-]{1,64}$/.test(jail)) throw queryError('jail', 'a jail name: letters, digits and . _ - @ only');
    const jails = await this.f2b.jails();
    const merged = new Map<string, { jails: string[]; bans: JailBan[] }>();
    for (const jail of jails) {
      for (const ban of await this.f2b.bans(jail)) {
        const ip = canonical(ban.ip);
        const e = merged.get(ip) ?? { jails: [], bans: [] };
        if (!e.jails.includes(jail)) e.jails.push(jail);
        e.bans.push(ban);
        merged.set(ip, e);
      }
    }
    const reasons = new Map((await this.repo.all()).map((r) => [r.ip, r]));
    return [...merged.entries()]
      // Every jail is read even for one: an entry still names all the jails that hold it.
      .filter(([ip, e]) => (!q || ip.includes(q)) && (!jail || e.jails.includes(jail)))
      .map(([ip, e]): BanView => {
        const starts = e.bans.map((b) => b.bannedAt?.getTime() ?? null);
        const ends = e.bans.map((b) => (b.bannedAt !== null && b.expiresAt === null ? Infinity : (b.expiresAt?.getTime() ?? null)));
        const known = <T>(xs: (T | null)[]): T[] => xs.filter((x): x is T => x !== null);
        const start = known(starts).length ? Math.min(...known(starts)) : null;
        // The address is free when its last ban ends; a ban without end (or an unknown one) makes that unknown.
        const end = ends.includes(null) || ends.includes(Infinity) || !ends.length ? null : Math.max(...known(ends));
        return {
          ip,
          jails: e.jails.sort(),
          reason: reasons.get(ip)?.reason ?? null,
          banned_at: start === null ? null : new Date(start).toISOString(),
          expires_at: end === null ? null : new Date(end).toISOString(),
        };
      })
      .sort(order ? bySort(order) : byAddress);
  }

  /** A page of the bans; `q`: the addresses containing it (case-insensitive), `jail`: the bans that jail holds. */
  async list(page: Page, filter: BanFilter = {}, sort?: string): Promise<{ items: BanView[]; total: number; limit: number; offset: number }> {
    const all = await this.listAll(sort, filter);
    return { items: all.slice(page.offset, page.offset + page.limit), total: all.length, ...page };
  }

  /** The address or network as a ban takes it; 422 naming `ip` otherwise. */
  parse(raw: string): IpNet {
    const net = parseIpNet(raw);
    if (!net) throw invalid('ip', `"${raw.slice(0, 64)}" is not an IPv4 or IPv6 address or a CIDR network at its base address`);
    return net;
  }

  /** Adds a manual ban to every active jail, after the safety rules. */
  async ban(rawIp: string, rawReason: string, caller: BanCaller): Promise<BanView> {
    const net = this.parse(rawIp);
    if (net.bits < WIDEST[net.kind]) throw invalid('ip', `a ban may name a network no wider than /${WIDEST[net.kind]} for ${net.kind === 'ipv4' ? 'IPv4' : 'IPv6'}`);
    const reason = rawReason.trim();
    if (reason === '' || reason.length > 500 || [...reason].some((c) => c.charCodeAt(0) < 32 || c.charCodeAt(0) === 127)) throw invalid('reason', 'give a reason of 1 to 500 characters on one line');
    const jails = await this.f2b.jails();
    if (jails.length === 0) throw new AppError('conflict', 'fail2ban has no active jail to add the ban to');
    const ignoreIp = [...new Set((await Promise.all(jails.map((j) => this.f2b.ignoreIp(j)))).flat())];
    const why = whyRefused(net, { trustedProxies: this.protect.trustedProxies, ignoreIp, caller: caller.address, host: this.protect.host() });
    if (why) throw invalid('ip', why);
    await this.repo.put({ ip: net.text, reason, banned_by: caller.subject, banned_at: this.clock.now() });
    for (const jail of jails) await this.f2b.ban(jail, net.text);
    const view = (await this.listAll()).find((b) => b.ip === net.text);
    if (!view) throw new AppError('upstream', `fail2ban did not record the ban of ${net.text}`);
    return view;
  }

  /** Lifts the ban in every jail that holds it, then checks that none still does. */
  async unban(rawIp: string): Promise<{ ip: string; jails: string[] }> {
    const net = this.parse(rawIp);
    const holding = (await this.listAll()).find((b) => b.ip === net.text);
    if (!holding) throw new AppError('not_found', `no jail bans ${net.text}`);
    for (const jail of holding.jails) await this.f2b.unban(jail, net.text);
    const still = await this.f2b.bannedIn(net.text);
    if (still.length > 0) throw new AppError('upstream', `${net.text} is still banned in ${still.join(', ')} after the unban`);
    await this.repo.remove(net.text);
    return { ip: net.text, jails: holding.jails };
  }
}
