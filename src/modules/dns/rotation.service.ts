import { DnsClient } from '../../adapters/dns/dns-client.js';
import type { DnsServer } from '../../adapters/dns/dns-client.js';
import type { Db } from '../../db/database.js';
import type { DkimRotationTable } from './tables.js';
import type { Clock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';
import type { DomainLookup } from '../domains/index.js';
import { findAuthoritative, once } from './deliverability/run-checks.js';
import { queryTxt } from '../../adapters/dns/txt-query.js';
import type { DkimService } from './dkim.service.js';
import { presentKey } from './dkim.service.js';

/**
 * The steps of a rotation, in order. Each is stored before the next begins, so
 * a crash at any point resumes at the step that did not finish; every step is
 * safe to do twice.
 */
export const ROTATION_STEPS = ['generate', 'publish', 'await-visible', 'await-ttl', 'switch', 'grace', 'remove', 'done'] as const;
export type RotationStep = (typeof ROTATION_STEPS)[number];

export type RotationStatus = { domain: string; step: RotationStep; new_selector: string; old_selectors: string[]; waiting: string | null; wait_until: string | null };

export type RotationDeps = {
  db: Db;
  clock: Clock;
  dkim: DkimService;
  domains: Pick<DomainLookup, 'resolve'>;
  resolvers: readonly DnsServer[];
  authoritative: readonly DnsServer[];
  /** The limits dkim-rotation-days and dkim-rotation-grace-days, read per call. */
  rotationDays: () => number;
  graceDays: () => number;
  /** Publishes the domain's live DKIM records (Cloudflare sync when set up); false: nothing to do it with, the administrator publishes. */
  publish: (domain: string) => Promise<boolean>;
  ed25519: boolean;
};

const DAY = 86_400_000;

/**
 * DKIM rotation: new key → published → every authoritative server answers the
 * new record byte-identical → its TTL has passed → Rspamd switches to it →
 * the old record stays published for the grace period → the old record and
 * key go. Mail is never signed with a selector before it is visible.
 */
export class RotationService {
  constructor(private readonly d: RotationDeps) {}

  private async row(domain: string): Promise<DkimRotationTable | undefined> {
    return this.d.db.selectFrom('dkim_rotations').selectAll().where('domain', '=', domain).executeTakeFirst();
  }

  private async save(domain: string, step: RotationStep, waitUntil: number | null, error: string | null = null): Promise<void> {
    await this.d.db.updateTable('dkim_rotations').set({ step, wait_until: waitUntil, updated_at: this.d.clock.now(), last_error: error }).where('domain', '=', domain).execute();
  }

  private status(r: DkimRotationTable, waiting: string | null): RotationStatus {
    return { domain: r.domain, step: r.step as RotationStep, new_selector: r.new_selector, old_selectors: (r.old_selector ?? '').split(',').filter(Boolean), waiting, wait_until: r.wait_until === null ? null : new Date(r.wait_until).toISOString() };
  }

  /**
   * Is the record at `name` exactly `value` on every authoritative server of
   * the domain? Then the TTL they publish for it (the largest), else what is missing.
   */
  private async visibleEverywhere(domain: string, name: string, value: string): Promise<{ missing: string } | { ttl: number }> {
    const servers = this.d.authoritative.length ? this.d.authoritative : await findAuthoritative(domain, once(new DnsClient(this.d.resolvers)));
    if (servers.length === 0) return { missing: `cannot find the authoritative servers of ${domain}` };
    let ttl = 0;
    for (const s of servers) {
      const a = await queryTxt(s, name, { timeoutMs: 2000, tries: 2 });
      const values = a.kind === 'records' ? a.values : [];
      if (values.length !== 1 || values[0] !== value) return { missing: `${s.host}:${s.port} ${a.kind === 'error' ? `does not answer (${a.detail})` : values.length ? 'answers another value' : 'does not have it yet'} for ${name}` };
      if (a.kind === 'records') ttl = Math.max(ttl, a.ttl);
    }
    return { ttl };
  }

  /** Starts a rotation (or resumes the one in progress) and takes it as far as it can go now. */
  async rotate(domainName: string): Promise<RotationStatus> {
    const { name } = await this.d.domains.resolve(domainName);
    let r = await this.row(name);
    if (!r) {
      const live = await this.d.dkim.liveRows(name);
      const active = live.filter((k) => k.state === 'active');
      if (active.length === 0) throw new AppError('bad_request', `Domain ${name} has no DKIM key to rotate: make one with mailsvc dns generate-dkim ${name}`);
      const now = this.d.clock.now();
      await this.d.db.insertInto('dkim_rotations').values({ domain: name, step: 'generate', new_selector: await this.d.dkim.nextSelector(name), old_selector: active.map((k) => k.selector).join(','), wait_until: null, started_at: now, updated_at: now, last_error: null }).execute();
      r = await this.row(name);
      if (!r) throw new AppError('internal', 'the rotation was not stored');
    }
    return this.advance(r);
  }

  private async advance(start: DkimRotationTable): Promise<RotationStatus> {
    let r = start;
    const domain = r.domain;
    const olds = (r.old_selector ?? '').split(',').filter(Boolean);
    const newSelectors = async () => (await this.d.dkim.liveRows(domain)).filter((k) => k.selector === r.new_selector || k.selector === `${r.new_selector}e`);
    try {
      for (;;) {
        const step = r.step as RotationStep;
        const now = this.d.clock.now();
        if (step === 'generate') {
          // Idempotent: the keys of this selector are made once, whatever stopped us before.
          if ((await newSelectors()).length === 0) await this.d.dkim.makeKeys(domain, 'pending', this.d.ed25519, r.new_selector);
          await this.save(domain, 'publish', null);
        } else if (step === 'publish') {
          await this.d.publish(domain);
          await this.save(domain, 'await-visible', null);
        } else if (step === 'await-visible') {
          // The TTL the authoritative servers publish for the new records (the largest): the deadline is stored, so a restart keeps it.
          let ttl = 0;
          for (const k of (await newSelectors()).map(presentKey)) {
            const seen = await this.visibleEverywhere(domain, k.record_name, k.record_value);
            if ('missing' in seen) return this.status(r, `publication: ${seen.missing}`);
            ttl = Math.max(ttl, seen.ttl);
          }
          await this.save(domain, 'await-ttl', now + ttl * 1000);
        } else if (step === 'await-ttl') {
          if (r.wait_until !== null && now < r.wait_until) return this.status(r, 'the TTL the authoritative servers publish for the new record to pass (caches may still miss it)');
          await this.save(domain, 'switch', null);
        } else if (step === 'switch') {
          const fresh = (await newSelectors()).map((k) => k.selector);
          await this.d.dkim.setState(domain, fresh, 'active');
          await this.d.dkim.setState(domain, olds, 'retiring');
          await this.d.dkim.syncSigning();
          await this.save(domain, 'grace', now + this.d.graceDays() * DAY);
        } else if (step === 'grace') {
          if (r.wait_until !== null && now < r.wait_until) return this.status(r, 'the grace period (mail signed with the old key may still be verified)');
          await this.save(domain, 'remove', null);
        } else if (step === 'remove') {
          await this.d.dkim.setState(domain, olds, 'retired');
          await this.d.publish(domain);
          // Rspamd stopped signing with the old selectors at the switch: their key files go now.
          await this.d.dkim.removeKeyFiles(domain, olds);
          await this.save(domain, 'done', null);
        } else {
          await this.d.db.deleteFrom('dkim_rotations').where('domain', '=', domain).execute();
          return { ...this.status(r, null), step: 'done' };
        }
        const next = await this.row(domain);
        if (!next) throw new AppError('internal', 'the rotation disappeared');
        r = next;
      }
    } catch (err) {
      const text = err instanceof AppError ? err.detail : err instanceof Error ? err.message : String(err);
      await this.d.db.updateTable('dkim_rotations').set({ last_error: text.slice(0, 1000), updated_at: this.d.clock.now() }).where('domain', '=', domain).execute();
      throw err;
    }
  }

  /** The rotation in progress of a domain, or null. */
  async current(domainName: string): Promise<RotationStatus | null> {
    const { name } = await this.d.domains.resolve(domainName);
    const r = await this.row(name);
    return r ? this.status(r, null) : null;
  }

  /** What the schedule runs: every rotation in progress advanced, and one started where the active key is older than dkim-rotation-days. */
  async advanceDue(): Promise<RotationStatus[]> {
    const out: RotationStatus[] = [];
    const running = await this.d.db.selectFrom('dkim_rotations').select('domain').execute();
    const cutoff = this.d.clock.now() - this.d.rotationDays() * DAY;
    const old = await this.d.db.selectFrom('dkim_keys').select('domain').distinct().where('state', '=', 'active').where('activated_at', '<', cutoff).execute();
    for (const domain of new Set([...running.map((x) => x.domain), ...old.map((x) => x.domain)])) out.push(await this.rotate(domain));
    return out;
  }
}
