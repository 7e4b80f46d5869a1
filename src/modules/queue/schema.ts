import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { QUEUE_ID_MAX, QUEUE_NAMES } from '../../shared/queue-id.js';
import type { QueueName } from '../../shared/queue-id.js';
import { PagedOf, PageQuery } from '../paging.schema.js';

/** At most this many ids in one batch action: a page of the panel's list is 25, the API's at most 500. */
export const QUEUE_BATCH_MAX = 500;
import { SortQuery } from '../sort.schema.js';

// Spelled out (not mapped from QUEUE_NAMES) so that TypeBox keeps the literal types; the check below keeps them equal.
export const QueueNameSchema = Type.Union(
  [Type.Literal('maildrop'), Type.Literal('incoming'), Type.Literal('active'), Type.Literal('deferred'), Type.Literal('hold')],
  { description: 'a Postfix queue' },
);
const sameNames: [Static<typeof QueueNameSchema>] extends [QueueName] ? ([QueueName] extends [Static<typeof QueueNameSchema>] ? true : false) : false = true;
void sameNames;

export const QueueEntrySchema = Type.Object(
  {
    queue_id: Type.String(),
    queue_name: QueueNameSchema,
    arrival_time: Type.String({ format: 'date-time', description: 'ISO 8601, UTC' }),
    message_size: Type.Integer({ description: 'bytes' }),
    sender: Type.String({ description: 'the envelope sender; MAILER-DAEMON for a bounce' }),
    recipients: Type.Array(Type.Object({ address: Type.String(), delay_reason: Type.Union([Type.String(), Type.Null()]) })),
  },
  { title: 'QueueEntry' },
);
export type QueueEntry = Static<typeof QueueEntrySchema>;

export const QueuePageSchema = PagedOf(QueueEntrySchema, 'QueuePage');
export type QueuePage = Static<typeof QueuePageSchema>;

const addressFilter = (what: string) =>
  Type.Optional(Type.String({ minLength: 1, maxLength: 320, pattern: '^[^\\s\\x00-\\x1f]+$', description: `${what}: an address (any case), or @domain for every address of a domain` }));

export const QueueFilterQuery = {
  queue: Type.Optional(QueueNameSchema),
  sender: addressFilter('the envelope sender'),
  recipient: addressFilter('one of the recipients'),
};
/** What `GET /admin/queue?sort=` orders by (ties by queue id). */
export const QUEUE_SORT = ['arrival_time', 'message_size', 'sender', 'queue_name'] as const;
export type QueueSortField = (typeof QUEUE_SORT)[number];

export const QueueListQuery = Type.Object({ ...QueueFilterQuery, ...PageQuery, sort: SortQuery(QUEUE_SORT, "in postqueue's order") });

export const QueueBulkQuery = Type.Object({
  ...QueueFilterQuery,
  older_than: Type.Optional(Type.String({ pattern: '^[0-9]{1,9}[smhdw]?$', description: 'arrived longer ago than this: seconds, or 30m, 4h, 2d, 1w' })),
  dry_run: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
  bounce: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')], { description: 'return the messages to their senders instead of dropping them' })),
});

export const QueueIdParam = Type.Object({ id: Type.String({ minLength: 1, maxLength: QUEUE_ID_MAX + 20 }) });
export const BounceQuery = Type.Object({ bounce: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) });

export const QueueActionSchema = Type.Object(
  { queue_id: Type.String(), action: Type.Union([Type.Literal('held'), Type.Literal('released'), Type.Literal('deleted'), Type.Literal('bounced')]) },
  { title: 'QueueAction' },
);
export type QueueAction = Static<typeof QueueActionSchema>;

/** Hold, release or delete several messages named by id (the panel's selected rows). */
export const QueueBatchBody = Type.Object(
  {
    action: Type.Union([Type.Literal('hold'), Type.Literal('release'), Type.Literal('delete')]),
    ids: Type.Array(Type.String({ minLength: 1, maxLength: QUEUE_ID_MAX + 20 }), { minItems: 1, maxItems: QUEUE_BATCH_MAX, description: `1 to ${QUEUE_BATCH_MAX} Postfix queue ids` }),
  },
  { additionalProperties: false },
);
export type QueueBatch = Static<typeof QueueBatchBody>;
export const QueueBatchSchema = Type.Object(
  {
    action: Type.Union([Type.Literal('held'), Type.Literal('released'), Type.Literal('deleted')]),
    requested: Type.Integer({ description: 'distinct ids asked for' }),
    count: Type.Integer({ description: 'messages postsuper changed; the others were gone or already in that state' }),
  },
  { title: 'QueueBatchResult' },
);
export type QueueBatchResult = Static<typeof QueueBatchSchema>;

export const QueueCountSchema = Type.Object({ count: Type.Integer({ description: 'messages matched (dry run) or acted on' }) }, { title: 'QueueCount' });
export type QueueCount = Static<typeof QueueCountSchema>;

export const QueueCountsSchema = Type.Object(
  Object.fromEntries(QUEUE_NAMES.map((n) => [n, Type.Integer()])) as Record<(typeof QUEUE_NAMES)[number], ReturnType<typeof Type.Integer>>,
  { title: 'QueueCounts' },
);
export type QueueCounts = Static<typeof QueueCountsSchema>;
