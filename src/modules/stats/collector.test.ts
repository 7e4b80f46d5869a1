import { describe, expect, it } from 'vitest';
import { MessageJoiner, messageKey } from './collector.js';

/** The join map's bounds while a big log is read: memory must not grow with the log. */
describe('MessageJoiner.trim', () => {
  const DAY = 86_400_000;
  const t0 = Date.UTC(2026, 0, 1);

  it('holds at most the limit: stale messages go first, then the oldest', () => {
    const j = new MessageJoiner();
    // 50 messages queued long ago (stale after 30 days), then 200 recent ones, none removed.
    for (let i = 0; i < 50; i++) j.add({ kind: 'from', qid: `OLD${String(i).padStart(4, '0')}`, at: t0, sender: '', size: 1 });
    for (let i = 0; i < 200; i++) j.add({ kind: 'from', qid: `NEW${String(i).padStart(4, '0')}`, at: t0 + 40 * DAY + i, sender: '', size: 1 });
    j.trim(t0 + 40 * DAY + 200, 100);
    expect(j.size).toBe(100);
    const kept = Object.keys(j.save(t0 + 40 * DAY + 200));
    // The stale ones went, then the oldest of the recent: the newest 100 stay.
    expect(kept).toEqual(Array.from({ length: 100 }, (_, i) => `NEW${String(i + 100).padStart(4, '0')}`));
  });

  it('leaves the map alone under the limit, and a message completed after a trim still gives its rows', () => {
    const j = new MessageJoiner();
    j.add({ kind: 'client', qid: 'ABCDEF1', authenticated: false });
    j.add({ kind: 'from', qid: 'ABCDEF1', at: t0, sender: 'x@remote.test', size: 10 });
    j.trim(t0 + 100 * DAY, 10);
    expect(j.size).toBe(1);
    j.add({ kind: 'delivered', qid: 'ABCDEF1', at: t0, recipient: 'bob@example.org', local: true });
    expect(j.add({ kind: 'removed', qid: 'ABCDEF1', at: t0 })).toMatchObject([{ mailbox: 'bob@example.org', direction: 'inbound', size: 10, at: t0 }]);
    expect(j.size).toBe(0);
  });
});

describe('messageKey', () => {
  const at = Date.UTC(2026, 0, 1, 12, 0, 0, 250);
  it('is the arrival time in 12 hex digits, then 13 of the queue id hash: fixed width, growing with time, nothing of the log', () => {
    const k = messageKey('F3EA720C66F', at);
    expect(k).toMatch(/^[0-9a-f]{25}$/);
    expect(k.slice(0, 12)).toBe(at.toString(16).padStart(12, '0'));
    expect(k).not.toContain('f3ea720c66f');
    // The same message gives the same key (collecting twice counts nothing twice) ...
    expect(messageKey('F3EA720C66F', at)).toBe(k);
    // ... a reused queue id at another time, or another queue id at the same time, another key.
    expect(messageKey('F3EA720C66F', at + 1)).not.toBe(k);
    expect(messageKey('F3EA720C66E', at)).not.toBe(k);
    expect(messageKey('F3EA720C66F', at + 1) > k).toBe(true);
  });

  it('does not collide over 200,000 queue ids in one millisecond', () => {
    const keys = new Set<string>();
    for (let i = 0; i < 200_000; i++) keys.add(messageKey((0x1000000000 + i).toString(16).toUpperCase(), at));
    expect(keys.size).toBe(200_000);
  });
});
