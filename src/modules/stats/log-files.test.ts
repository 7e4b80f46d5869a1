import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { readChunks } from './log-files.js';

/** readChunks on plain and .gz files: whole lines only, from any offset, whatever their length. */
describe('readChunks', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-readchunks-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  // A line longer than the read buffer (1 MiB; 9 MiB makes it grow more than once) between short ones, and a last line still being written.
  const long = `x${'y'.repeat(9 << 20)}`;
  const text = `first line\n${long}\nthird line\nnot finished`;

  const linesOf = async (path: string, gz: boolean, start: number) => {
    const lines: string[] = [];
    const end = await readChunks({ path, gz, stat: statSync(path) }, start, (chunk, bytes) => {
      expect(bytes.length).toBe(chunk.length);
      expect(chunk.endsWith('\n')).toBe(true);
      lines.push(...chunk.slice(0, -1).split('\n'));
    });
    return { lines, end };
  };

  it.each([false, true])('gz %s: every complete line once, the unfinished one left for the next run', async (gz) => {
    const path = join(dir, gz ? 'mail.log.2.gz' : 'mail.log');
    writeFileSync(path, gz ? gzipSync(text) : text);
    const all = await linesOf(path, gz, 0);
    expect(all.lines.map((l) => l.slice(0, 12))).toEqual(['first line', long.slice(0, 12), 'third line']);
    expect(all.lines[1]).toBe(long);
    expect(all.end).toBe(text.length - 'not finished'.length);
    // From an offset (where an earlier run stopped): the lines after it.
    const rest = await linesOf(path, gz, 'first line\n'.length + long.length + 1);
    expect(rest.lines).toEqual(['third line']);
    expect(rest.end).toBe(all.end);
  });
});
