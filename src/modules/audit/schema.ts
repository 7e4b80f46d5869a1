import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { PageQuery, PagedOf } from '../paging.schema.js';
import { SortQuery } from '../sort.schema.js';
import type { Sort } from '../sort.schema.js';

const Scalar = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);

export const AuditEntrySchema = Type.Object(
  {
    id: Type.Integer(),
    at: Type.String({ format: 'date-time' }),
    actor: Type.String({ description: 'the admin username, or the OS user on the host CLI' }),
    token_id: Type.Union([Type.String(), Type.Null()], { description: 'the access token used, when a Bearer token was' }),
    source: Type.String({ description: 'the client address, or `cli` for a host command' }),
    action: Type.String({ description: 'e.g. `DELETE /domains/:domain` or `cli: domains delete`' }),
    target: Type.Union([Type.String(), Type.Null()]),
    summary: Type.Record(Type.String(), Scalar, { description: 'the scalar fields of the change; secrets read "[redacted]"' }),
    result: Type.String({ description: '`ok` or the error code' }),
  },
  { title: 'AuditEntry' },
);
export type AuditEntry = Static<typeof AuditEntrySchema>;
export type AuditSummary = AuditEntry['summary'];

export const AuditPageSchema = PagedOf(AuditEntrySchema, 'AuditPage');
export type AuditPage = Static<typeof AuditPageSchema>;

const IsoTime = Type.String({ format: 'date-time', maxLength: 40, description: 'ISO 8601 time, e.g. 2026-01-31T00:00:00Z' });

/** What `GET /admin/audit?sort=` orders by (ties newest first). */
export const AUDIT_SORT = ['at', 'action', 'actor', 'source', 'result'] as const;
export type AuditSortField = (typeof AUDIT_SORT)[number];
export type AuditSort = Sort<AuditSortField>;

export const AuditQuery = Type.Object({
  ...PageQuery,
  sort: SortQuery(AUDIT_SORT, 'newest first (-at)'),
  action: Type.Optional(Type.String({ maxLength: 255, description: 'exact action' })),
  target: Type.Optional(Type.String({ maxLength: 512, description: 'exact target' })),
  actor: Type.Optional(Type.String({ maxLength: 255, description: 'exact actor: the admin username, or the OS user of a host command' })),
  from: Type.Optional(IsoTime),
  to: Type.Optional(IsoTime),
});
export type AuditQueryType = Static<typeof AuditQuery>;

/** What a caller records; `at` is set by the service. */
export type AuditRecord = {
  actor: string;
  tokenId: string | null;
  source: string;
  action: string;
  target: string | null;
  summary: AuditSummary;
  result: string;
};

/** Filters of a listing; times in epoch milliseconds, `to` exclusive. */
export type AuditFilter = { action?: string | undefined; target?: string | undefined; actor?: string | undefined; from?: number | undefined; to?: number | undefined };
