import { DnsClient } from '../../adapters/dns/dns-client.js';
import type { DnsServer } from '../../adapters/dns/dns-client.js';
import { queryTlsa } from '../../adapters/dns/tlsa-query.js';
import type { Tlsa } from '../../adapters/dns/tlsa-query.js';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';
import { normalizeDomain } from '../../shared/mail-names.js';
import { findZoneAuthoritative, once } from './deliverability/run-checks.js';
import { spkiHex, spkiSha256, spkiSha256OfDer } from './dane-spki.js';
import { probeStarttls } from '../../adapters/smtp/starttls-probe.js';
import type { DaneKeyTable } from './tables.js';

/**
 * The states of a mail host's DANE key, in order of a key change. Each is
 * stored before the next begins, so a crash at any point resumes at the
 * state that did not finish; every step is safe to do twice.
 *
 * idle: `TLSA 3 1 1 <current>` is published. publishing-next: the next key's
 * record is to be published beside it. awaiting-visibility: waiting until
 * every authoritative server answers both. waiting-ttl: until the TTL they
 * publish has passed (caches that held only the current record expired).
 * ready-to-deploy: the new certificate may be deployed now, and not before.
 * retiring-old: deployed; the old key's record is withdrawn.
 */
export const DANE_STATES = ['idle', 'publishing-next', 'awaiting-visibility', 'waiting-ttl', 'ready-to-deploy', 'retiring-old'] as const;
export type DaneState = (typeof DANE_STATES)[number];

/** Where a mail host's DANE key stands. */
export type DaneRolloverState = {
  mail_host: string;
  state: DaneState;
  /** The SPKI SHA-256 (hex) of the key port 25 serves. */
  current_spki: string;
  /** The next key's, during a key change. */
  next_spki: string | null;
  /** The TLSA records mailsvc publishes now, as `name. TTL IN TLSA 3 1 1 <hex>` values (`3 1 1 <hex>`). */
  records: string[];
  /** True only in ready-to-deploy: the new certificate may go on port 25. */
  deploy_allowed: boolean;
  /** What the key change waits for now. */
  waiting: string | null;
  wait_until: string | null;
  last_error: string | null;
  updated_at: string;
};

/** What the certs module calls for one mail host's certificate. */
export interface DaneKeys {
  /** The certificate's key is staying: nothing to do. The key changes: publish next first. Returns the state. */
  prepareKeyChange(nextSpkiSha256Hex: string): Promise<DaneRolloverState>;
  /** True when every authoritative server serves both current and next TLSA and the TTL has passed. Resumable; advances the state machine. */
  advance(): Promise<DaneRolloverState>;
  /** Called after the new certificate is deployed and proven: old record retired. */
  completeKeyChange(): Promise<DaneRolloverState>;
  /** First certificate / adoption of what port 25 serves. */
  setCurrent(spkiSha256Hex: string): Promise<void>;
  status(): Promise<DaneRolloverState>;
}

export type DaneDeps = {
  db: Db;
  /** Reads the key port 25 serves (adoption): STARTTLS on the mail host, the leaf's SPKI SHA-256. */
  servedSpki?: (mailHost: string) => Promise<string>;
  clock: Clock;
  resolvers: readonly DnsServer[];
  /** MAILSVC_DNS_AUTHORITATIVE; empty: the NS records of the zone that holds the mail host. */
  authoritative: readonly DnsServer[];
  /** Publishes the mail host's TLSA records (the Cloudflare sync when set up); false: nothing to do it with, the administrator publishes from the plan. */
  publish: (mailHost: string) => Promise<boolean>;
};

/** The owner name of the TLSA records of SMTP on port 25 (RFC 7672 §2.2). */
export const tlsaName = (mailHost: string): string => `_25._tcp.${mailHost}`;
export const daneRecord = (spki: string): Tlsa => ({ usage: 3, selector: 1, matching: 1, data: spki });

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const errText = (err: unknown): string => (err instanceof AppError ? err.detail : err instanceof Error ? err.message : String(err));

/**
 * DANE for the mail host (RFC 7671 §8.1 "current + next"): the TLSA record
 * of the key port 25 serves; when the certificate's key changes, the next
 * key's record is published first, and the new certificate may be deployed
 * only once every authoritative server answers both records and the TTL they
 * publish has passed. After the deployment the old record is withdrawn.
 */
export class DaneService {
  constructor(private readonly d: DaneDeps) {}

  /** One mail host's keys, as the certs module uses them. */
  keys(mailHost: string): DaneKeys {
    return {
      prepareKeyChange: (next) => this.prepareKeyChange(mailHost, next),
      advance: () => this.advance(mailHost),
      completeKeyChange: () => this.completeKeyChange(mailHost),
      setCurrent: (spki) => this.setCurrent(mailHost, spki),
      status: () => this.status(mailHost),
    };
  }

  private row(host: string): Promise<DaneKeyTable | undefined> {
    return this.d.db.selectFrom('dane_keys').selectAll().where('mail_host', '=', host).executeTakeFirst();
  }

  private async mustRow(host: string): Promise<DaneKeyTable> {
    const r = await this.row(host);
    if (!r) throw new AppError('not_found', `No DANE key of ${host} yet: it is set when mailsvc issues the mail host's certificate (or with mailsvc dns dane adopt ${host})`);
    return r;
  }

  /** Moves from `from` to `to` only if no one else moved it meanwhile (the timer and a command may both advance). */
  private async move(r: DaneKeyTable, to: DaneState, set: Partial<Pick<DaneKeyTable, 'current_spki' | 'next_spki' | 'wait_until'>> = {}): Promise<void> {
    await this.d.db
      .updateTable('dane_keys')
      .set({ state: to, wait_until: null, ...set, updated_at: this.d.clock.now(), last_error: null })
      .where('mail_host', '=', r.mail_host)
      .where('state', '=', r.state)
      .execute();
  }

  private view(r: DaneKeyTable, waiting: string | null = null): DaneRolloverState {
    const state = r.state as DaneState;
    return {
      mail_host: r.mail_host,
      state,
      current_spki: r.current_spki,
      next_spki: r.next_spki,
      records: this.recordsOf(r).map((t) => `${t.usage} ${t.selector} ${t.matching} ${t.data}`),
      deploy_allowed: state === 'ready-to-deploy',
      waiting,
      wait_until: iso(r.wait_until),
      last_error: r.last_error,
      updated_at: new Date(r.updated_at).toISOString(),
    };
  }

  private recordsOf(r: DaneKeyTable): Tlsa[] {
    return [r.current_spki, ...(r.next_spki !== null && r.next_spki !== r.current_spki ? [r.next_spki] : [])].map(daneRecord);
  }

  /** The TLSA records to publish for a mail host (the DNS plan, the Cloudflare sync): none until a key is known. */
  async records(mailHost: string): Promise<Tlsa[]> {
    const r = await this.row(normalizeDomain(mailHost));
    return r ? this.recordsOf(r) : [];
  }

  /** The same, each with why (the DNS plan). */
  async planRecords(mailHost: string): Promise<{ record: Tlsa; purpose: string }[]> {
    const r = await this.row(normalizeDomain(mailHost));
    if (!r) return [];
    const out = [{ record: daneRecord(r.current_spki), purpose: 'DANE (RFC 7672): the SHA-256 of the public key port 25 serves; senders check it when the zone is DNSSEC-signed' }];
    if (r.next_spki !== null && r.next_spki !== r.current_spki) {
      out.push({ record: daneRecord(r.next_spki), purpose: `DANE: the next certificate key's, published before that certificate is deployed (key change at ${r.state})` });
    }
    return out;
  }

  async status(mailHost: string): Promise<DaneRolloverState> {
    return this.view(await this.mustRow(normalizeDomain(mailHost)));
  }

  /** Every mail host's state. */
  async list(): Promise<DaneRolloverState[]> {
    const rows = await this.d.db.selectFrom('dane_keys').selectAll().orderBy('mail_host').execute();
    return rows.map((r) => this.view(r));
  }

  /** The key port 25 serves now (first certificate, or adopting one mailsvc did not issue). Refused during a key change. */
  async setCurrent(mailHost: string, spkiSha256Hex: string): Promise<void> {
    const host = normalizeDomain(mailHost);
    const spki = spkiHex(spkiSha256Hex);
    const now = this.d.clock.now();
    await this.d.db.transaction().execute(async (tx) => {
      const r = await tx.selectFrom('dane_keys').selectAll().where('mail_host', '=', host).executeTakeFirst();
      if (!r) {
        await tx.insertInto('dane_keys').values({ mail_host: host, current_spki: spki, next_spki: null, state: 'idle', wait_until: null, created_at: now, updated_at: now, last_error: null }).execute();
        return;
      }
      if (r.current_spki === spki) return;
      if (r.state !== 'idle') throw new AppError('conflict', `A DANE key change of ${host} is in progress (${r.state}): finish it (mailsvc dns dane advance ${host}) before setting another key`);
      await tx.updateTable('dane_keys').set({ current_spki: spki, updated_at: now, last_error: null }).where('mail_host', '=', host).execute();
    });
    await this.d.publish(host);
  }

  /**
   * Adopts the key port 25 serves now (a certificate mailsvc did not issue),
   * or the key of a PEM certificate or key: the current key, published from
   * the plan. Refused during a key change.
   */
  async adopt(mailHost: string, pem?: string): Promise<DaneRolloverState> {
    const host = normalizeDomain(mailHost);
    let spki: string;
    if (pem !== undefined) spki = spkiSha256(pem);
    else if (this.d.servedSpki) spki = await this.d.servedSpki(host);
    else throw new AppError('unavailable', 'cannot read what port 25 serves here: give the certificate file (--cert)');
    await this.setCurrent(host, spki);
    return this.status(host);
  }

  /**
   * The next certificate's key. The same as the current one: nothing to do
   * (a renewal that keeps its key). Another: its record is published beside
   * the current one, and the key change is taken as far as it can go now.
   */
  async prepareKeyChange(mailHost: string, nextSpkiSha256Hex: string): Promise<DaneRolloverState> {
    const host = normalizeDomain(mailHost);
    const next = spkiHex(nextSpkiSha256Hex, 'next SPKI SHA-256');
    let r = await this.mustRow(host);
    if (r.state === 'retiring-old') {
      await this.advance(host);
      r = await this.mustRow(host);
      if (r.state === 'retiring-old') throw new AppError('conflict', `The previous DANE key change of ${host} is still withdrawing the old record: run mailsvc dns dane advance ${host}`);
    }
    if (next === r.current_spki && r.state === 'idle') return this.view(r);
    if (next !== r.next_spki) {
      // A new key, or another one than the key change in progress was for (a new key was made again): its record must be published and waited for from the start.
      // The current key after all (the change is called off): back to idle, the next record withdrawn.
      const keep = next === r.current_spki;
      await this.d.db.updateTable('dane_keys').set({ next_spki: keep ? null : next, state: keep ? 'retiring-old' : 'publishing-next', wait_until: null, updated_at: this.d.clock.now(), last_error: null }).where('mail_host', '=', host).execute();
    }
    return this.advance(host);
  }

  /**
   * Takes the key change as far as it can go now; resumable after a crash at
   * any point. ready-to-deploy is the only state in which the new
   * certificate may be deployed.
   */
  async advance(mailHost: string): Promise<DaneRolloverState> {
    const host = normalizeDomain(mailHost);
    let r = await this.mustRow(host);
    try {
      for (let guard = 0; guard < 16; guard++) {
        const state = r.state as DaneState;
        const now = this.d.clock.now();
        if (state === 'idle' || state === 'ready-to-deploy') return this.view(r);
        if (state === 'publishing-next') {
          await this.d.publish(host);
          await this.move(r, 'awaiting-visibility');
        } else if (state === 'awaiting-visibility') {
          const seen = await this.visibleEverywhere(host, this.recordsOf(r));
          if ('missing' in seen) return this.view(r, `publication: ${seen.missing}`);
          // The deadline is stored: a restart keeps it.
          await this.move(r, 'waiting-ttl', { wait_until: now + seen.ttl * 1000 });
        } else if (state === 'waiting-ttl') {
          if (r.wait_until !== null && now < r.wait_until) return this.view(r, 'the TTL the authoritative servers publish for the TLSA records to pass (caches may still hold only the current record)');
          await this.move(r, 'ready-to-deploy');
        } else {
          // retiring-old: the new key is current; the plan and the sync now hold only its record.
          await this.d.publish(host);
          await this.move(r, 'idle');
        }
        r = await this.mustRow(host);
      }
      return this.view(r);
    } catch (err) {
      await this.d.db.updateTable('dane_keys').set({ last_error: errText(err).slice(0, 1000), updated_at: this.d.clock.now() }).where('mail_host', '=', host).execute();
      throw err;
    }
  }

  /** After the new certificate is deployed and proven on port 25: its key becomes the current one and the old record is withdrawn. */
  async completeKeyChange(mailHost: string): Promise<DaneRolloverState> {
    const host = normalizeDomain(mailHost);
    const r = await this.mustRow(host);
    if (r.state === 'idle' || r.state === 'retiring-old') return this.advance(host);
    if (r.state !== 'ready-to-deploy' || r.next_spki === null) {
      const seen = await this.advance(host);
      throw new AppError('conflict', `The DANE key change of ${host} is at ${seen.state}${seen.waiting ? `, waiting for ${seen.waiting}` : ''}: the new certificate may not be deployed yet`);
    }
    await this.move(r, 'retiring-old', { current_spki: r.next_spki, next_spki: null });
    return this.advance(host);
  }

  /** What the timer runs: every key change in progress advanced (a failing host does not stop the others). */
  async advanceAll(): Promise<{ states: DaneRolloverState[]; errors: { mail_host: string; error: string }[] }> {
    const rows = await this.d.db.selectFrom('dane_keys').select('mail_host').where('state', '<>', 'idle').orderBy('mail_host').execute();
    const states: DaneRolloverState[] = [];
    const errors: { mail_host: string; error: string }[] = [];
    for (const { mail_host } of rows) {
      try {
        states.push(await this.advance(mail_host));
      } catch (err) {
        errors.push({ mail_host, error: errText(err) });
      }
    }
    return { states, errors };
  }

  /**
   * Does every authoritative server of the mail host's zone answer each of
   * `records` at _25._tcp.<host>? Then the largest TTL they publish, else what is missing.
   */
  private async visibleEverywhere(host: string, records: readonly Tlsa[]): Promise<{ missing: string } | { ttl: number }> {
    const servers = this.d.authoritative.length ? this.d.authoritative : await findZoneAuthoritative(host, once(new DnsClient(this.d.resolvers)));
    if (servers.length === 0) return { missing: `cannot find the authoritative servers of the zone of ${host}` };
    const name = tlsaName(host);
    let ttl = 0;
    for (const s of servers) {
      const a = await queryTlsa(s, name, { timeoutMs: 2000, tries: 2 });
      if (a.kind === 'error') return { missing: `${s.host}:${s.port} does not answer (${a.detail})` };
      const have = a.kind === 'records' ? a.records : [];
      const lacking = records.filter((w) => !have.some((h) => h.usage === w.usage && h.selector === w.selector && h.matching === w.matching && h.data === w.data));
      if (lacking.length) return { missing: `${s.host}:${s.port} does not answer ${name}. TLSA ${lacking.map((t) => `${t.usage} ${t.selector} ${t.matching} ${t.data.slice(0, 12)}…`).join(' and ')} yet` };
      if (a.kind === 'records') ttl = Math.max(ttl, a.ttl);
    }
    return { ttl };
  }
}

/** What port 25 of the mail host serves: the SPKI SHA-256 of the leaf it sends after STARTTLS (the address from the resolvers). */
export function servedSpkiOverSmtp(o: { resolvers: readonly DnsServer[]; port: number; ca?: readonly string[] | undefined }): (mailHost: string) => Promise<string> {
  return async (host) => {
    const client = new DnsClient(o.resolvers);
    const [a, aaaa] = await Promise.all([client.query(host, 'A'), client.query(host, 'AAAA')]);
    const address = [...(a.kind === 'records' ? a.records : []), ...(aaaa.kind === 'records' ? aaaa.records : [])][0];
    if (address === undefined) throw new AppError('bad_request', `${host} has no address in DNS (${a.kind === 'error' ? a.detail : 'no A or AAAA record'}): give the certificate file (--cert)`);
    const r = await probeStarttls(address, o.port, host, { timeoutMs: 10_000, ...(o.ca ? { ca: o.ca } : {}) });
    if (!r.ok) throw new AppError('upstream', `${host} (${address}) port ${o.port}: ${r.stage}: ${r.detail}; give the certificate file (--cert)`);
    const leaf = r.chain[0];
    if (!r.offered || !leaf) throw new AppError('bad_request', `${host} (${address}) port ${o.port} does not offer STARTTLS with a certificate: nothing to adopt`);
    return spkiSha256OfDer(leaf);
  };
}
