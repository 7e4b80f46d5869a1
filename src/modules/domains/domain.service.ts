import { AppError, queryError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import { normalizeDomain } from '../../shared/mail-names.js';
import { isUniqueViolation } from '../../shared/db-errors.js';
import type { Page, Paged } from '../../shared/paging.js';
import { beginDeletion } from '../deletion.js';
import { sortOf } from '../sort.schema.js';
import type { EventSource } from '../module-types.js';
import type { DomainRepository, DomainRow } from './domain.repository.js';

export type { DomainView } from './schema.js';
import type { DomainView } from './schema.js';
import { DOMAIN_SORT } from './schema.js';

/**
 * Makes the first DKIM keys of a new domain (`add domain --generate-dkim`,
 * `POST /domains {generate_dkim}`): the dns module's, which owns the keys (the
 * domains module never reads them).
 */
export type DomainKeyMaker = {
  generate(domain: string): Promise<{ keys: { selector: string; record_name: string; record_value: string }[] }>;
  /** Whether the domain has DKIM keys (signing or published). */
  has(domain: string): Promise<boolean>;
  /** Renders Rspamd's signing again from the stored keys (key files and dkim_signing.conf), checked and reloaded. */
  resync(): Promise<void>;
};

/**
 * `domain.deleting`: a domain without accounts or aliases is being deleted.
 * Other modules drop what hangs on it in the same transaction (the dns
 * module retires its DKIM keys), and may refuse first.
 */
export type DomainDeleting = { id: number; name: string };

/**
 * The set of active domains changed (a domain added, deleted, switched on or
 * off): what mirrors it outside the database follows at once (the dns
 * module: postsrsd's excluded domains). Best effort: it never fails the
 * change, and says itself when it could not follow (log, audit).
 */
export type ActiveDomainsChanged = (change: { action: 'created' | 'deleted' | 'activated' | 'deactivated'; domain: string }) => Promise<void>;

const iso = (ms: number): string => new Date(ms).toISOString();
export const presentDomain = (r: DomainRow & { accounts?: number; aliases?: number }): DomainView => ({
  id: r.id,
  name: r.name,
  active: r.active === 1,
  ...(r.accounts === undefined ? {} : { accounts: r.accounts, aliases: r.aliases ?? 0 }),
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

/** A new domain's view with the records of the keys just made. */
const withKeys = (domain: DomainView, keys: Awaited<ReturnType<DomainKeyMaker['generate']>>['keys']): DomainView => ({
  ...domain,
  dkim: { keys: keys.map((k) => ({ selector: k.selector, record_name: k.record_name, record_value: k.record_value })) },
});

export class DomainService {
  constructor(
    private readonly repo: DomainRepository,
    private readonly clock: Clock,
    private readonly keys?: DomainKeyMaker,
    private readonly deleting?: EventSource<DomainDeleting>,
    private readonly activeChanged?: ActiveDomainsChanged,
  ) {}

  private async changed(action: Parameters<ActiveDomainsChanged>[0]['action'], domain: string): Promise<void> {
    await this.activeChanged?.({ action, domain }).catch(() => undefined);
  }

  /**
   * A new domain with its DKIM keys: when the keys cannot be made (Rspamd
   * refuses the configuration), the domain is removed again, so a retry starts clean.
   */
  async createWithDkim(name: string): Promise<DomainView> {
    if (!this.keys) throw new AppError('bad_request', 'DKIM keys cannot be made here: the dns module is not available');
    let domain: DomainView;
    try {
      domain = await this.create(name);
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'conflict') throw err;
      return this.completeWithDkim(this.keys, name, err);
    }
    try {
      const { keys } = await this.keys.generate(domain.name);
      return withKeys(domain, keys);
    } catch (err) {
      await this.repo.deleteIfEmpty(domain.id);
      await this.changed('deleted', domain.name);
      throw err;
    }
  }

  /**
   * The domain exists. An earlier `add domain --generate-dkim` stopped between its steps (the process killed, the
   * power lost: docs/reliability.md) may have left it without keys, or with keys Rspamd does not sign with yet:
   * this run completes it. A domain with keys stays 409, once its signing is rendered again from the stored keys
   * (best effort: the 409 is the answer either way).
   */
  private async completeWithDkim(keys: DomainKeyMaker, name: string, exists: AppError): Promise<DomainView> {
    const row = await this.resolve(name);
    if (await keys.has(row.name)) {
      await keys.resync().catch(() => undefined);
      throw exists;
    }
    const made = await keys.generate(row.name);
    return withKeys(presentDomain(row), made.keys);
  }

  async create(name: string): Promise<DomainView> {
    const normalized = normalizeDomain(name);
    let created: DomainView;
    try {
      created = presentDomain(await this.repo.insert(normalized, this.clock.now()));
    } catch (err) {
      if (isUniqueViolation(err)) throw new AppError('conflict', `Domain ${normalized} already exists`);
      throw err;
    }
    await this.changed('created', created.name);
    return created;
  }

  /** The names of every active domain (postsrsd's excluded domains). */
  async activeNames(): Promise<string[]> {
    return this.repo.activeNames();
  }

  /** A page of the domains; `q`: only names containing it (case-insensitive, as names are stored in lowercase). */
  async list(page: Page, filter: { q?: string | undefined } = {}, sort?: string): Promise<Paged<DomainView>> {
    const order = sortOf(sort, DOMAIN_SORT);
    const q = filter.q?.trim().toLowerCase();
    if (q !== undefined && !/^[a-z0-9.-]{0,253}$/.test(q)) {
      const message = 'letters, digits, dots and hyphens only (an IDN in its xn-- form)';
      throw queryError('q', message);
    }
    const { rows, total } = await this.repo.list(page, q || undefined, order);
    return { items: rows.map(presentDomain), total, ...page };
  }

  /** By id (a number) or by name. */
  async resolve(idOrName: string | number): Promise<DomainRow> {
    const row =
      typeof idOrName === 'number' || /^\d+$/.test(idOrName)
        ? await this.repo.findById(Number(idOrName))
        : await this.repo.findByName(normalizeDomain(idOrName));
    if (!row) throw new AppError('not_found', `Domain ${String(idOrName)} not found`);
    return row;
  }

  /** The domain of a new account or alias; a 400 names what to do when it does not exist. */
  async requireExisting(name: string): Promise<DomainRow> {
    const row = await this.repo.findByName(name);
    if (!row) throw new AppError('bad_request', `Unknown domain ${name}: add it first (POST /domains or mailsvc add domain ${name})`);
    return row;
  }

  async get(idOrName: string | number): Promise<DomainView> {
    return presentDomain(await this.resolve(idOrName));
  }

  async setActive(idOrName: string | number, active: boolean): Promise<DomainView> {
    const row = await this.resolve(idOrName);
    await this.repo.setActive(row.id, active, this.clock.now());
    if ((row.active === 1) !== active) await this.changed(active ? 'activated' : 'deactivated', row.name);
    return this.get(row.id);
  }

  /**
   * Deletes an empty domain. Every module that listens to `domain.deleting`
   * does its part: first what happens outside the database (the dns module:
   * Rspamd stops signing for it; each may refuse, and then nothing is
   * deleted), then, in one transaction, the domain row goes with their rows.
   * When the transaction fails, what they did first is put back.
   */
  async delete(idOrName: string | number): Promise<void> {
    const row = await this.resolve(idOrName);
    if (!(await this.repo.isEmpty(row.id))) throw this.notEmpty(row.name);
    const deletion = await beginDeletion(this.deleting, { id: row.id, name: row.name });
    let result: 'deleted' | 'not_empty' | 'missing';
    try {
      result = await this.repo.deleteIfEmpty(row.id, (tx) => deletion.within(tx));
    } catch (err) {
      // The note says what could not be put back, and what puts it right.
      const note = await deletion.undo();
      if (!note) throw err;
      throw err instanceof AppError ? new AppError(err.code, `${err.detail}${note}`) : new Error(`${err instanceof Error ? err.message : String(err)}${note}`);
    }
    if (result === 'deleted') return this.changed('deleted', row.name);
    const note = await deletion.undo();
    if (result === 'not_empty') throw new AppError('conflict', `${this.notEmpty(row.name).detail}${note}`);
    throw new AppError('not_found', `Domain ${row.name} not found${note}`);
  }

  private notEmpty(name: string): AppError {
    return new AppError('conflict', `Domain ${name} still has accounts or aliases: delete them first`);
  }
}
