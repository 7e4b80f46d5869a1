import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Writable } from 'node:stream';
import { API_RESERVE, checkDescriptorBudget, openFileLimit } from './listener-limits.js';
import { LogThrottle } from './log-throttle.js';

function captured(): { log: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) });
  return { log: pino({}, sink), lines };
}

describe('descriptor budget: the listeners leave the API a reserve', () => {
  it('reads the soft open-file limit of this process', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-limits-'));
    const file = join(dir, 'limits');
    writeFileSync(file, 'Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n');
    expect(openFileLimit(file)).toBe(1024);
    expect(openFileLimit(join(dir, 'missing'))).toBeNull();
    expect(openFileLimit()).toBeGreaterThan(0);
  });

  it('warns when the caps and the reserve exceed the limit, and only then', () => {
    const a = captured();
    expect(checkDescriptorBudget({ policy: 200, hook: 200 }, a.log, 400 + API_RESERVE)).toBe(true);
    expect(a.lines).toEqual([]);
    const b = captured();
    expect(checkDescriptorBudget({ policy: 200, hook: 400 }, b.log, 512)).toBe(false);
    expect(b.lines.join('')).toMatch(/raise LimitNOFILE=/);
  });

  it('LogThrottle: one line per key per interval, then the count of those held back', () => {
    let now = 0;
    const t = new LogThrottle(1000, () => now);
    expect(t.admit('a')).toBe(0);
    expect(t.admit('a')).toBeNull();
    expect(t.admit('a')).toBeNull();
    expect(t.admit('b')).toBe(0);
    now = 1000;
    expect(t.admit('a')).toBe(2);
  });
});
