import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { PageQuery, PagedOf } from '../paging.schema.js';

const Figures = Type.Object({ messages: Type.Integer(), bytes: Type.Integer() });
const PerDirection = { inbound: Figures, outbound: Figures, local: Figures };
const DirectionEnum = Type.Union([Type.Literal('inbound'), Type.Literal('outbound'), Type.Literal('local')]);
const Time = Type.String({ format: 'date-time' });

export const StatsQuery = Type.Object(
  {
    from: Type.Optional(Type.String({ maxLength: 40, description: 'ISO 8601 date or time (UTC when no offset); default 30 days before `to`' })),
    to: Type.Optional(Type.String({ maxLength: 40, description: 'ISO 8601 date or time, exclusive; default now' })),
    mailbox: Type.Optional(Type.String({ maxLength: 320 })),
    direction: Type.Optional(DirectionEnum),
  },
  { additionalProperties: false },
);
export const MailboxesQuery = Type.Object({ ...StatsQuery.properties, ...PageQuery }, { additionalProperties: false });
export const TimelineQuery = Type.Object(
  { ...StatsQuery.properties, bucket: Type.Optional(Type.Union([Type.Literal('hour'), Type.Literal('day')], { description: 'default: hour for a range of up to 2 days, else day' })) },
  { additionalProperties: false },
);

const RangeFields = { from: Time, to: Time, mailbox: Type.Union([Type.String(), Type.Null()]), direction: Type.Union([DirectionEnum, Type.Null()]) };

export const StatsSummarySchema = Type.Object({ ...RangeFields, total: Figures, ...PerDirection }, { title: 'StatsSummary' });
export const MailboxStatsSchema = Type.Object({ mailbox: Type.String(), ...PerDirection }, { title: 'MailboxStats' });
export const MailboxStatsPageSchema = PagedOf(MailboxStatsSchema, 'MailboxStatsPage');
export const TimelineSchema = Type.Object(
  { ...RangeFields, bucket: Type.Union([Type.Literal('hour'), Type.Literal('day')]), items: Type.Array(Type.Object({ time: Time, ...PerDirection })) },
  { title: 'StatsTimeline' },
);
/** The journal's part of a collect run: where it started (`cursor-gone`: the saved entry was vacuumed) and the lines it read. */
const JournalReadSchema = Type.Object({
  from: Type.Union([Type.Literal('beginning'), Type.Literal('cursor'), Type.Literal('cursor-gone')]),
  lines: Type.Integer(),
});
export const CollectResultSchema = Type.Object(
  {
    /** The log files read (empty when the journal was read). */
    files_read: Type.Array(Type.String()),
    /** Null unless the systemd journal was read (no log file, or MAILSVC_MAIL_LOG=journal). */
    journal: Type.Union([JournalReadSchema, Type.Null()]),
    lines: Type.Integer(), rows_added: Type.Integer(), rows_pruned: Type.Integer(), open_messages: Type.Integer(),
  },
  { title: 'StatsCollectResult' },
);

export type StatsSummary = Static<typeof StatsSummarySchema>;
export type MailboxStats = Static<typeof MailboxStatsSchema>;
export type StatsTimeline = Static<typeof TimelineSchema>;
export type CollectResult = Static<typeof CollectResultSchema>;
