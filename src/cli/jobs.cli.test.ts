import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCli, expectOk, json, runCli } from '../../test/helpers/cli.js';
import type { CliResult } from '../../test/helpers/cli.js';

/** `mailsvc jobs sample` runs a job in the foreground: progress lines on stderr (no terminal here), the record on stdout. */
let dirs: string[] = [];
/** A fresh, migrated data directory (host commands never create the database). */
async function migratedDir(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-jobs-cli-'));
  dirs.push(dir);
  expectOk(await runCli(['db', 'migrate'], { env: { MAILSVC_DATA_DIR: dir } }));
  return dir;
}
const cli = async (args: string[]): Promise<CliResult> => runCli(args, { env: { MAILSVC_DATA_DIR: await migratedDir() } });
beforeAll(() => {
  buildCli();
}, 120_000);
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

describe('mailsvc jobs', () => {
  it('sample --json: plain progress lines per 10 % on stderr, the final record on stdout', { timeout: 60_000 }, async () => {
    const r = await cli(['jobs', 'sample', '--count', '20', '--step-ms', '1', '--json']);
    expectOk(r);
    expect(json(r)).toMatchObject({ kind: 'sample', state: 'succeeded', progress: 1, message: 'done', result: { counted: 20 } });
    expect(r.stderr.split('\n').filter((l) => l !== '')).toEqual([
      '[  5%] counting to 20', // the first message
      ...[10, 20, 30, 40, 50, 60, 70, 80, 90, 100].map((p) => `[${String(p).padStart(3)}%] counting to 20`),
      '[100%] done',
    ]);
  });

  it('a failing job exits 1 and prints its record with the reason; show reads it back', { timeout: 60_000 }, async () => {
    const dir = await migratedDir();
    const r = await runCli(['jobs', 'sample', '--count', '10', '--step-ms', '1', '--fail-at', '4', '--json'], { env: { MAILSVC_DATA_DIR: dir } });
    expect(r.code).toBe(1);
    const record = json(r);
    expect(record).toMatchObject({ state: 'failed', message: 'sample job failed at 4 as asked', progress: 0.3, result: null });
    const shown = await runCli(['jobs', 'show', String(record.id), '--json'], { env: { MAILSVC_DATA_DIR: dir } });
    expectOk(shown);
    expect(json(shown)).toEqual(record);
    const missing = await runCli(['jobs', 'show', 'nosuchjob'], { env: { MAILSVC_DATA_DIR: dir } });
    expect(missing.code).toBe(4);
    expect(missing.stderr).toBe('mailsvc: No job nosuchjob\n');
  });
});
