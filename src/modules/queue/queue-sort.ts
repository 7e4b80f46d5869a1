import type { PostqueueMessage } from '../../adapters/postfix/postqueue.js';
import type { Sort } from '../sort.schema.js';
import type { QueueSortField } from './schema.js';

/** The order `sort` asks for; ties by queue id (unique), so pages never overlap. */
export function byQueueSort(sort: Sort<QueueSortField>): (a: PostqueueMessage, b: PostqueueMessage) => number {
  const sign = sort.desc ? -1 : 1;
  const key = (m: PostqueueMessage): string | number => {
    if (sort.field === 'arrival_time') return m.arrival_time;
    if (sort.field === 'message_size') return m.message_size;
    return sort.field === 'sender' ? m.sender.toLowerCase() : m.queue_name;
  };
  return (a, b) => {
    const x = key(a);
    const y = key(b);
    if (x !== y) return sign * (x < y ? -1 : 1);
    return a.queue_id < b.queue_id ? -1 : a.queue_id > b.queue_id ? 1 : 0;
  };
}

/**
 * The first `keep` of what is offered, in `compare`'s order, holding never
 * more than `keep`: a sorted page of a stream (postqueue's) without keeping
 * the stream. Each offer is a binary search and at most one insertion.
 */
export function firstInOrder<T>(compare: (a: T, b: T) => number, keep: number): { offer(item: T): void; items(): T[] } {
  const best: T[] = [];
  return {
    offer(item) {
      const last = best[best.length - 1];
      if (best.length >= keep && last !== undefined && compare(item, last) >= 0) return;
      let lo = 0;
      let hi = best.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (compare(item, best[mid] as T) < 0) hi = mid;
        else lo = mid + 1;
      }
      best.splice(lo, 0, item);
      if (best.length > keep) best.pop();
    },
    items: () => best,
  };
}
