import { describe, expect, it } from 'vitest';
import { deliverabilityExit } from './exit-code.js';

describe('the exit code of dns check', () => {
  it.each([
    [{ pass: 9, fail: 0, unknown: 0 }, false, 0],
    // Recommendations (an unsigned zone's DNSSEC and DANE) never make dns check fail, strict or not.
    [{ pass: 9, warn: 2, fail: 0, unknown: 0 }, false, 0],
    [{ pass: 9, warn: 2, fail: 0, unknown: 0 }, true, 0],
    [{ pass: 8, fail: 1, unknown: 2 }, false, 1],
    [{ pass: 8, fail: 0, unknown: 2 }, false, 0],
    [{ pass: 8, fail: 0, unknown: 2 }, true, 1],
    // Nothing could be determined: never "healthy", strict or not.
    [{ pass: 0, fail: 0, unknown: 11 }, false, 69],
    [{ pass: 0, fail: 0, unknown: 11 }, true, 69],
    [{ pass: 0, fail: 1, unknown: 10 }, false, 1],
  ])('%j strict=%s → %i', (counts, strict, code) => {
    expect(deliverabilityExit(counts, strict)).toBe(code);
  });
});
