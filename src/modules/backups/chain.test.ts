import { describe, expect, it } from 'vitest';
import { retentionPlan, groupChains } from './chain.js';

const DAY = 86_400_000;
const NOW = Date.parse('2026-11-23T12:00:00Z');
const at = (daysAgo: number): string => new Date(NOW - daysAgo * DAY).toISOString();
/** A full `f` with incrementals, each a day apart, oldest first. */
function chain(name: string, startDaysAgo: number, incrementals: number) {
  const out: { id: string; chain: string[]; completed_at: string }[] = [];
  const ids: string[] = [];
  for (let i = 0; i <= incrementals; i++) {
    const id = `${name}${i}`;
    ids.push(id);
    out.push({ id, chain: [...ids], completed_at: at(startDaysAgo - i) });
  }
  return out;
}

describe('retention', () => {
  it('removes backups older than RETENTION_DAYS whose chain no kept backup needs', () => {
    const backups = [...chain('a', 30, 6), ...chain('b', 10, 3)];
    const plan = retentionPlan(backups, 14, NOW);
    expect(plan.remove.sort()).toEqual(['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6']);
    expect(plan.keep.sort()).toEqual(['b0', 'b1', 'b2', 'b3']);
  });

  it('keeps the full (and the links) an incremental inside the window depends on, however old', () => {
    const backups = chain('a', 20, 10); // a0 is 20 days old, a10 10 days old
    const plan = retentionPlan(backups, 14, NOW);
    expect(plan.remove).toEqual([]);
  });

  it('never deletes the newest complete chain, even when all of it is older than the window', () => {
    const backups = [...chain('a', 60, 2), ...chain('b', 40, 2)];
    const plan = retentionPlan(backups, 7, NOW);
    expect(plan.keep.sort()).toEqual(['b0', 'b1', 'b2']);
    expect(plan.remove.sort()).toEqual(['a0', 'a1', 'a2']);
  });

  it('the newest chain kept is a complete one: a newer incremental whose full is gone does not count', () => {
    const b = chain('b', 40, 2).filter((x) => x.id !== 'b0');
    const plan = retentionPlan([...chain('a', 60, 1), ...b], 7, NOW);
    expect(plan.keep.sort()).toEqual(['a0', 'a1']);
  });

  it('groups chains newest first', () => {
    const g = groupChains([...chain('a', 30, 1), ...chain('b', 10, 2)]);
    expect(g.map((c) => [c.full, c.members.length])).toEqual([['b0', 3], ['a0', 2]]);
  });
});
