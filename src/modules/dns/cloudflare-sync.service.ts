import { CloudflareClient, CloudflareError } from '../../adapters/cloudflare/client.js';
import type { CfRecord, CfRecordInput } from '../../adapters/cloudflare/client.js';
import type { OutboundPolicy } from '../../adapters/outbound/address-policy.js';
import type { Db } from '../../db/database.js';
import { sealContext } from '../../db/sealed-columns.js';
import type { Clock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';
import type { SecretBox } from '../../shared/secret-box.js';
import type { DomainLookup } from '../domains/index.js';
import { presentKey } from './dkim.service.js';
import type { DkimService } from './dkim.service.js';
import { PLAN_TTL } from './dns-plan.js';
import type { DnsSyncView, SyncResult } from './schema.js';
import { splitTxt } from './txt.js';
import type { Tlsa } from '../../adapters/dns/tlsa-query.js';
import { tlsaText } from '../../adapters/dns/tlsa-query.js';

/** The comment that marks a record as mailsvc's: only such records are ever updated or deleted. */
export const OWNER_TAG = 'mailsvc:dkim';
/** The comment of mailsvc's TLSA records (DANE of the mail host). */
export const DANE_TAG = 'mailsvc:dane';
/** The comment of an ACME dns-01 answer mailsvc published (removed when the order is done). */
export const ACME_TAG = 'mailsvc:acme';

/** The TXT value a record holds, however it is quoted (`"a" "b"` → `ab`). */
export function txtContent(content: string): string {
  const t = content.trim();
  if (!t.startsWith('"')) return t;
  return [...t.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => (m[1] ?? '').replace(/\\(.)/g, '$1')).join('');
}
/** What mailsvc writes: the value as quoted 255-byte strings (a longer single string is refused by resolvers). */
export const cfTxt = (value: string): string => splitTxt(value).map((s) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(' ');

export type CloudflareSyncDeps = {
  db: Db;
  box: () => SecretBox;
  clock: Clock;
  domains: Pick<DomainLookup, 'resolve'>;
  dkim: Pick<DkimService, 'liveRows'>;
  apiUrl: string;
  policy: OutboundPolicy;
  /** The TLSA records mailsvc publishes for a mail host (the DANE keys). */
  tlsa?: (mailHost: string) => Promise<Tlsa[]>;
  ca?: readonly string[] | undefined;
  sleep?: (ms: number) => Promise<void>;
};

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());
const cfFailure = (err: unknown, what: string): AppError => {
  if (!(err instanceof CloudflareError)) return err instanceof AppError ? err : new AppError('upstream', `${what}: ${err instanceof Error ? err.message : String(err)}`);
  if (err.status === 401 || err.status === 403) return new AppError('bad_request', `${what}: Cloudflare refused the token (${err.message}); give a token with Zone.DNS edit permission on this zone`);
  if (err.status === 404) return new AppError('bad_request', `${what}: Cloudflare does not know that zone id (${err.message})`);
  return new AppError('upstream', `${what}: ${err.message}`);
};

/** `dns configure-cloudflare` and `dns sync-dkim`: the DKIM records in a Cloudflare zone, mailsvc's own only. */
export class CloudflareSyncService {
  constructor(private readonly d: CloudflareSyncDeps) {}

  private client(token: string): CloudflareClient {
    return new CloudflareClient({ baseUrl: this.d.apiUrl, token, policy: this.d.policy, ...(this.d.ca ? { ca: this.d.ca } : {}), ...(this.d.sleep ? { sleep: this.d.sleep } : {}) });
  }

  async get(domainName: string): Promise<DnsSyncView> {
    const { name } = await this.d.domains.resolve(domainName);
    const row = await this.d.db.selectFrom('dns_sync').selectAll().where('domain', '=', name).executeTakeFirst();
    if (!row) throw new AppError('not_found', `No DNS sync set up for ${name}: mailsvc dns configure-cloudflare ${name} --zone-id <id> --api-token <token>`);
    return { domain: name, provider: 'cloudflare', zone_id: row.zone_id, api_token_set: row.api_token !== '', enabled: row.enabled === 1, updated_at: new Date(row.updated_at).toISOString(), last_sync_at: iso(row.last_sync_at) };
  }

  /** Syncs when automatic sync is on for the domain; false when it is not set up or off. */
  async syncIfEnabled(domain: string): Promise<boolean> {
    const row = await this.d.db.selectFrom('dns_sync').select('enabled').where('domain', '=', domain).executeTakeFirst();
    if (row?.enabled !== 1) return false;
    await this.syncDkim(domain);
    return true;
  }

  /**
   * Makes the Cloudflare zone that holds the mail host (the longest domain
   * with sync set up and on that is the host or a parent of it) hold exactly
   * mailsvc's TLSA records at _25._tcp.<host>: creates the missing ones,
   * deletes its own (comment mailsvc:dane) that are no longer wanted, never
   * touches another record, reads them back. False: no such zone, nothing done.
   */
  async syncTlsaIfEnabled(mailHost: string): Promise<boolean> {
    const host = mailHost.toLowerCase();
    const rows = await this.d.db.selectFrom('dns_sync').selectAll().where('enabled', '=', 1).execute();
    const row = rows.filter((r) => host === r.domain || host.endsWith(`.${r.domain}`)).sort((a, b) => b.domain.length - a.domain.length)[0];
    if (!row || !this.d.tlsa) return false;
    const cf = this.client(this.d.box().open(row.api_token, sealContext('dns_sync', row.domain, 'api_token')));
    const name = `_25._tcp.${host}`;
    const wanted = (await this.d.tlsa(host)).map(tlsaText);
    const content = (r: CfRecord) => r.content.trim().toLowerCase().replace(/\s+/g, ' ');
    const owned = (r: CfRecord) => (r.comment ?? '') === DANE_TAG;
    try {
      const existing = (await cf.listRecords(row.zone_id, { type: 'TLSA', name })).filter((r) => r.name === name);
      for (const w of wanted) {
        if (existing.some((r) => content(r) === w)) continue;
        const [usage, selector, matching, certificate] = w.split(' ');
        await cf.createRecord(row.zone_id, { type: 'TLSA', name, ttl: PLAN_TTL, proxied: false, comment: DANE_TAG, data: { usage: Number(usage), selector: Number(selector), matching_type: Number(matching), certificate: certificate ?? '' } });
      }
      for (const r of existing.filter((x) => owned(x) && !wanted.includes(content(x)))) await cf.deleteRecord(row.zone_id, r.id);
      const after = (await cf.listRecords(row.zone_id, { type: 'TLSA', name })).filter((r) => r.name === name);
      const mine = after.filter(owned).map(content).sort();
      if (!wanted.every((w) => after.some((r) => content(r) === w)) || mine.some((c) => !wanted.includes(c))) {
        throw new AppError('upstream', `Cloudflare sync of ${name}: the TLSA records read back differ from what was written`);
      }
      await this.d.db.updateTable('dns_sync').set({ last_sync_at: this.d.clock.now() }).where('domain', '=', row.domain).execute();
      return true;
    } catch (err) {
      throw cfFailure(err, `Cloudflare sync of ${name}`);
    }
  }

  /** The sync set up for the domain that holds `fqdn` (the longest match), with its opened token's client. */
  private async zoneFor(fqdn: string): Promise<{ domain: string; zoneId: string; cf: CloudflareClient }> {
    const rows = await this.d.db.selectFrom('dns_sync').select(['domain', 'zone_id', 'api_token']).execute();
    const row = rows.filter((r) => fqdn === r.domain || fqdn.endsWith(`.${r.domain}`)).sort((a, b) => b.domain.length - a.domain.length)[0];
    if (!row) throw new AppError('bad_request', `No Cloudflare sync holds ${fqdn}: mailsvc dns configure-cloudflare <its domain> --zone-id <id> --api-token <token>, or choose another MAILSVC_ACME_CHALLENGE`);
    return { domain: row.domain, zoneId: row.zone_id, cf: this.client(this.d.box().open(row.api_token, sealContext('dns_sync', row.domain, 'api_token'))) };
  }

  /**
   * An ACME dns-01 answer (the certs module): one TXT record tagged
   * `mailsvc:acme`, beside any other of the name (an order may ask for the
   * same name twice). Never proxied; the shortest TTL Cloudflare takes.
   */
  async publishAcmeTxt(fqdn: string, value: string): Promise<void> {
    const { zoneId, cf } = await this.zoneFor(fqdn);
    try {
      const here = await cf.listRecords(zoneId, { type: 'TXT', name: fqdn });
      if (here.some((r) => txtContent(r.content) === value)) return;
      await cf.createRecord(zoneId, { type: 'TXT', name: fqdn, content: cfTxt(value), ttl: 60, proxied: false, comment: ACME_TAG });
    } catch (err) {
      throw cfFailure(err, `publishing ${fqdn} at Cloudflare`);
    }
  }

  /** Removes the dns-01 answer again: only records tagged `mailsvc:acme` with that value. */
  async removeAcmeTxt(fqdn: string, value: string): Promise<void> {
    const { zoneId, cf } = await this.zoneFor(fqdn);
    try {
      for (const r of await cf.listRecords(zoneId, { type: 'TXT', name: fqdn })) {
        if (r.comment === ACME_TAG && txtContent(r.content) === value) await cf.deleteRecord(zoneId, r.id);
      }
    } catch (err) {
      throw cfFailure(err, `removing ${fqdn} at Cloudflare`);
    }
  }

  /** Checks the token against the zone (and that the zone holds the domain) before anything is stored. */
  async configure(domainName: string, input: { zoneId: string; token: string; enabled: boolean }): Promise<DnsSyncView> {
    const { name } = await this.d.domains.resolve(domainName);
    if (!/^[A-Za-z0-9]{1,64}$/.test(input.zoneId)) throw new AppError('bad_request', 'zone id: letters and digits only (Cloudflare dashboard, the zone\'s Overview page)');
    let zone: { name: string };
    try {
      zone = await this.client(input.token).zone(input.zoneId);
    } catch (err) {
      throw cfFailure(err, 'checking the token against the zone');
    }
    const zoneName = zone.name.toLowerCase();
    if (name !== zoneName && !name.endsWith(`.${zoneName}`)) throw new AppError('bad_request', `Zone ${input.zoneId} is ${zoneName}, which does not hold ${name}`);
    const now = this.d.clock.now();
    const sealed = this.d.box().seal(input.token, sealContext('dns_sync', name, 'api_token'));
    const values = { provider: 'cloudflare', zone_id: input.zoneId, api_token: sealed, enabled: input.enabled ? 1 : 0, updated_at: now };
    await this.d.db.transaction().execute(async (tx) => {
      const n = await tx.updateTable('dns_sync').set(values).where('domain', '=', name).executeTakeFirst();
      if (Number(n.numUpdatedRows) === 0) await tx.insertInto('dns_sync').values({ domain: name, ...values, last_sync_at: null }).execute();
    });
    return this.get(name);
  }

  /**
   * Makes the zone hold exactly the DKIM records of the domain's live keys
   * among the records tagged `mailsvc:dkim`: creates, updates, deletes retired
   * ones; never touches a record without the tag (reported as skipped). Never
   * proxied. After writing, reads the records back and compares.
   */
  async syncDkim(domainName: string, opts: { dryRun?: boolean } = {}): Promise<SyncResult> {
    const { name } = await this.d.domains.resolve(domainName);
    const row = await this.d.db.selectFrom('dns_sync').selectAll().where('domain', '=', name).executeTakeFirst();
    if (!row) throw new AppError('bad_request', `No DNS sync set up for ${name}: mailsvc dns configure-cloudflare ${name} --zone-id <id> --api-token <token>`);
    const cf = this.client(this.d.box().open(row.api_token, sealContext('dns_sync', name, 'api_token')));
    const wanted = (await this.d.dkim.liveRows(name)).map(presentKey).map((k) => ({ name: k.record_name, value: k.record_value }));
    try {
      const existing = (await cf.listRecords(row.zone_id, { type: 'TXT' })).filter((r) => r.name === name || r.name.endsWith(`._domainkey.${name}`));
      const changes: SyncResult['changes'] = [];
      const plan: (() => Promise<unknown>)[] = [];
      const input = (n: string, value: string): CfRecordInput => ({ type: 'TXT', name: n, content: cfTxt(value), ttl: PLAN_TTL, proxied: false, comment: OWNER_TAG });
      const owned = (r: CfRecord) => (r.comment ?? '').startsWith('mailsvc:');
      for (const w of wanted) {
        const here = existing.filter((r) => r.name === w.name);
        const mine = here.find(owned);
        const foreign = here.filter((r) => !owned(r));
        if (foreign.length && !mine) {
          changes.push({ action: 'skip', name: w.name, type: 'TXT', content: w.value, previous: txtContent(foreign[0]?.content ?? ''), reason: 'a record mailsvc does not own is there: remove it or add the comment mailsvc:dkim' });
          continue;
        }
        if (!mine) {
          changes.push({ action: 'create', name: w.name, type: 'TXT', content: w.value, previous: null, reason: 'published key' });
          plan.push(() => cf.createRecord(row.zone_id, input(w.name, w.value)));
        } else if (txtContent(mine.content) !== w.value || mine.proxied === true || mine.ttl !== PLAN_TTL) {
          changes.push({ action: 'update', name: w.name, type: 'TXT', content: w.value, previous: txtContent(mine.content), reason: 'differs from the key' });
          plan.push(() => cf.updateRecord(row.zone_id, mine.id, input(w.name, w.value)));
        } else changes.push({ action: 'keep', name: w.name, type: 'TXT', content: w.value, previous: txtContent(mine.content), reason: 'up to date' });
      }
      for (const r of existing.filter((x) => owned(x) && x.name.endsWith(`._domainkey.${name}`) && !wanted.some((w) => w.name === x.name))) {
        changes.push({ action: 'delete', name: r.name, type: 'TXT', content: txtContent(r.content), previous: txtContent(r.content), reason: 'the key is retired' });
        plan.push(() => cf.deleteRecord(row.zone_id, r.id));
      }
      if (opts.dryRun) return { domain: name, zone_id: row.zone_id, dry_run: true, changes, changed: 0, verified: false };
      for (const step of plan) await step();
      // Read back: what the zone holds now must be exactly what was meant.
      const after = (await cf.listRecords(row.zone_id, { type: 'TXT' })).filter((r) => owned(r) && r.name.endsWith(`._domainkey.${name}`));
      const verified = after.length === wanted.length && wanted.every((w) => after.some((r) => r.name === w.name && txtContent(r.content) === w.value && r.proxied !== true));
      await this.d.db.updateTable('dns_sync').set({ last_sync_at: this.d.clock.now() }).where('domain', '=', name).execute();
      if (!verified) throw new AppError('upstream', `Cloudflare sync of ${name}: the records read back differ from what was written; run mailsvc dns sync-dkim ${name} --dry-run to see them`);
      return { domain: name, zone_id: row.zone_id, dry_run: false, changes, changed: plan.length, verified };
    } catch (err) {
      throw cfFailure(err, `Cloudflare sync of ${name}`);
    }
  }
}
