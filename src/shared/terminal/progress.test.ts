import { describe, expect, it } from 'vitest';
import type { Job } from '../../modules/jobs/index.js';
import { progressView } from './progress.js';

const job = (over: Partial<Job> = {}): Job => ({ id: 'j1', kind: 'sample', state: 'succeeded', progress: 1, message: 'done', result: null, ...over });
const sink = (isTTY: boolean) => {
  const chunks: string[] = [];
  return { chunks, out: { isTTY, columns: 60, write: (s: string) => chunks.push(s) } };
};

describe('foreground job progress', () => {
  it('without a terminal: one plain line per 10 % reached or per new message', () => {
    const { chunks, out } = sink(false);
    const v = progressView(out);
    for (let i = 1; i <= 40; i++) v.update({ progress: i / 40, message: i <= 20 ? 'copying' : 'checking' });
    v.end(job());
    expect(chunks.join('')).toBe(
      ['[  2%] copying', '[ 10%] copying', '[ 20%] copying', '[ 30%] copying', '[ 40%] copying', '[ 50%] copying', '[ 52%] checking', '[ 60%] checking', '[ 70%] checking', '[ 80%] checking', '[ 90%] checking', '[100%] checking', '[100%] done', ''].join('\n'),
    );
  });

  it('on a terminal: a bar redrawn in place (at most every 100 ms), ended by a newline', () => {
    const { chunks, out } = sink(true);
    let t = 0;
    const v = progressView(out, () => t);
    for (let i = 1; i <= 10; i++) {
      t += 30;
      v.update({ progress: i / 20, message: 'counting' });
    }
    v.end(job({ progress: 1, message: 'done' }));
    expect(chunks.length).toBeLessThan(6);
    expect(chunks.every((c) => c.startsWith('\r') || c === '\n')).toBe(true);
    expect(chunks.at(-2)).toMatch(/^\r\[#{30}\] 100% done\s*$/);
    expect(chunks.at(-1)).toBe('\n');
    expect(chunks.slice(0, -2).join('')).toMatch(/\[#+\.+\]\s+\d+% counting/);
  });
});
