/**
 * Postfix queue ids, as `postqueue -j` prints them and `postsuper` takes them.
 *
 * - short (the default): upper-case hex, the microseconds of the arrival time
 *   (5 digits) followed by the queue file's inode number, e.g. `4B0A6210E3F`;
 * - long (`enable_long_queue_ids = yes`): the arrival time (seconds and
 *   microseconds; a `z` may occur inside them, as in `4jZtSR4MzmzJMGf`: the last `z` separates) and the inode number in Postfix's 51-letter alphabet (digits
 *   and consonants except z), separated by `z`, e.g. `4MfZ2x0Lq9zJx5`.
 *
 * Anything else (an option such as `-d`, `ALL`, a path, a space) is refused
 * before a program runs: `postsuper -d ALL` would empty the whole queue.
 */
const SHORT = /^[0-9A-F]{6,20}$/;
const LONG_CHAR = '[0-9BCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxy]';
const LONG = new RegExp(`^[0-9BCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz]{10,16}z${LONG_CHAR}{1,16}$`);

export const QUEUE_ID_MAX = 40;

export class QueueIdError extends Error {}

/** The id unchanged when it is a short or a long Postfix queue id; otherwise throws QueueIdError. */
export function parseQueueId(raw: string): string {
  if (raw.length <= QUEUE_ID_MAX && (SHORT.test(raw) || LONG.test(raw))) return raw;
  const shown = raw.length > QUEUE_ID_MAX ? `${raw.slice(0, QUEUE_ID_MAX)}…` : raw;
  throw new QueueIdError(`"${shown.replace(/[^\x20-\x7e]/g, '?')}" is not a Postfix queue id (short: hex such as 4B0A6210E3F; long: such as 4MfZ2x0Lq9zJx5)`);
}

/** The most ids one postsuper run is given (the bulk actions work in batches of this size). */
export const QUEUE_ID_BATCH = 500;

/** Several ids separated by commas, each checked by parseQueueId: the helper's `ids` argument. */
export function parseQueueIdList(raw: string): string {
  const ids = raw.split(',');
  if (ids.length > QUEUE_ID_BATCH) throw new QueueIdError(`at most ${QUEUE_ID_BATCH} queue ids at once`);
  return ids.map(parseQueueId).join(',');
}

/** The queues `postqueue -j` reports. */
export const QUEUE_NAMES = ['maildrop', 'incoming', 'active', 'deferred', 'hold'] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];
