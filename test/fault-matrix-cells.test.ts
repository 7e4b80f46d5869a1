/** The fault matrix's choice of cells (test/helpers/fault-matrix.ts): the CI sample covers every operation and every fault; a seed replays. */
import { describe, expect, it } from 'vitest';
import { pickCells, prng } from './helpers/fault-matrix.js';

const OPS = ['a', 'b', 'c', 'd', 'e', 'f'];
const FAULTS = ['k', 'l', 'm', 'n', 'o'];

describe('the fault matrix picks its cells from the seed', () => {
  it('the sample holds every operation and every fault at least once, for any seed', () => {
    for (const seed of [1, 2, 3, 20261129, 99999]) {
      const cells = pickCells(OPS, FAULTS, { MAILSVC_FAULT_SEED: String(seed) });
      expect(new Set(cells.map((c) => c.op))).toEqual(new Set(OPS));
      expect(new Set(cells.map((c) => c.fault))).toEqual(new Set(FAULTS));
      expect(cells.length).toBe(Math.max(OPS.length, FAULTS.length));
    }
    // More faults than operations: still each at least once.
    const cells = pickCells(['a', 'b'], FAULTS, {});
    expect(new Set(cells.map((c) => c.fault))).toEqual(new Set(FAULTS));
  });

  it('the same seed gives the same cells and the same points; another seed other ones', () => {
    expect(pickCells(OPS, FAULTS, { MAILSVC_FAULT_SEED: '7' })).toEqual(pickCells(OPS, FAULTS, { MAILSVC_FAULT_SEED: '7' }));
    expect(pickCells(OPS, FAULTS, { MAILSVC_FAULT_SEED: '7' })).not.toEqual(pickCells(OPS, FAULTS, { MAILSVC_FAULT_SEED: '8' }));
    const a = prng(42);
    const b = prng(42);
    const xs = [a(), a(), a()];
    expect([b(), b(), b()]).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
  });

  it('full runs every operation with every fault; MAILSVC_FAULT_CELLS replays the cells given', () => {
    expect(pickCells(OPS, FAULTS, { MAILSVC_FAULT_MATRIX: 'full' })).toHaveLength(OPS.length * FAULTS.length);
    expect(pickCells(OPS, FAULTS, { MAILSVC_FAULT_CELLS: 'b:m:123,a:k:9' })).toEqual([
      { op: 'b', fault: 'm', seed: 123 },
      { op: 'a', fault: 'k', seed: 9 },
    ]);
  });
});
