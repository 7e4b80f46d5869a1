import type { Logger } from 'pino';
import type { Clock } from '../../shared/clock.js';
import { badRequest } from '../../shared/errors.js';
import type { Page } from '../../shared/paging.js';
import type { AuditRepository, AuditRow } from './audit.repository.js';
import type { AuditEntry, AuditFilter, AuditPage, AuditRecord, AuditSummary } from './schema.js';
import { AUDIT_SORT } from './schema.js';
import { sortOf } from '../sort.schema.js';

const DAY_MS = 86_400_000;
/** Retention runs on a write at most this often; `audit prune` runs it at once. */
const PRUNE_EVERY_MS = 3_600_000;

function present(r: AuditRow): AuditEntry {
  let summary: AuditSummary = {};
  try {
    summary = JSON.parse(r.summary) as AuditSummary;
  } catch {
    summary = {};
  }
  return { id: r.id, at: new Date(r.at).toISOString(), actor: r.actor, token_id: r.token_id, source: r.source, action: r.action, target: r.target, summary, result: r.result };
}

/** Reads an ISO 8601 time given by a caller; a bad one is the caller's error. */
export function parseTime(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const t = Date.parse(value);
  if (!Number.isFinite(t) || !/^\d{4}-\d{2}-\d{2}/.test(value)) throw badRequest(`${name} must be an ISO 8601 time such as 2026-01-31T00:00:00Z`);
  return t;
}

/** The audit log: who changed what, from where, with what result. */
export class AuditService {
  private lastPrune = 0;

  constructor(
    private readonly repo: AuditRepository,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly retentionDays: number,
  ) {}

  /**
   * Records one change. Never throws: the change it describes has already
   * happened, so a failing audit write is logged, not turned into an error.
   * Returns whether the record was written.
   */
  async record(rec: AuditRecord): Promise<boolean> {
    const now = this.clock.now();
    try {
      await this.repo.insert({
        at: now,
        actor: rec.actor.slice(0, 255),
        token_id: rec.tokenId,
        source: rec.source.slice(0, 64),
        action: rec.action.slice(0, 255),
        target: rec.target === null ? null : rec.target.slice(0, 512),
        summary: JSON.stringify(rec.summary),
        result: rec.result.slice(0, 64),
      });
    } catch (err) {
      this.log.error({ err: { message: err instanceof Error ? err.message : String(err) }, action: rec.action }, 'audit record could not be written');
      return false;
    }
    if (now - this.lastPrune >= PRUNE_EVERY_MS) {
      this.lastPrune = now;
      await this.prune().catch((err: unknown) =>
        this.log.warn({ err: { message: err instanceof Error ? err.message : String(err) } }, 'audit retention could not run'),
      );
    }
    return true;
  }

  /** A page newest first, or in the order `sort` names (`at` / `-at`, or a field with the newest first among equals). */
  async list(filter: AuditFilter, page: Page, sort?: string): Promise<AuditPage> {
    const { rows, total } = await this.repo.list(filter, page, sortOf(sort, AUDIT_SORT));
    return { items: rows.map(present), total, limit: page.limit, offset: page.offset };
  }

  /** Deletes records older than the retention (MAILSVC_AUDIT_RETENTION_DAYS); returns how many. */
  async prune(): Promise<{ deleted: number; before: string }> {
    const before = this.clock.now() - this.retentionDays * DAY_MS;
    const deleted = await this.repo.deleteBefore(before);
    return { deleted, before: new Date(before).toISOString() };
  }
}
