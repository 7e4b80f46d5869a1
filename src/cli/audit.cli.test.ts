import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { buildCli, expectOk, expectOneErrorLine, json, runCli } from '../../test/helpers/cli.js';
import type { CliResult } from '../../test/helpers/cli.js';

/** Host commands write the audit log (who: the OS user, from: cli); `mailsvc audit list|prune` read and trim it. */
let dirs: string[] = [];
const dataDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'mailsvc-audit-cli-'));
  dirs.push(d);
  return d;
};
const array = (r: CliResult): Record<string, unknown>[] => JSON.parse(r.stdout) as Record<string, unknown>[];
const cli = (dir: string, args: string[], input?: string): Promise<CliResult> =>
  runCli(args, { env: { MAILSVC_DATA_DIR: dir, MAILSVC_DOVEADM: '/bin/true' }, ...(input === undefined ? {} : { input }) });

beforeAll(() => {
  buildCli();
}, 120_000);
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

describe('mailsvc audit', () => {
  it('records state-changing commands with the OS user, the result and no secret; lists and filters them', { timeout: 120_000 }, async () => {
    const dir = dataDir();
    expectOk(await cli(dir, ['db', 'migrate']));
    expectOk(await cli(dir, ['add', 'domain', 'example.org']));
    expect((await cli(dir, ['domains', 'delete', 'nosuch.org'])).code).toBe(4);
    expectOk(await cli(dir, ['accounts', 'add', 'alice@example.org', '--password-stdin', '--quota', '1G'], 'Cli-Secret-Pw-7781\n'));
    expectOk(await cli(dir, ['accounts', 'passwd', 'alice@example.org', '--password-stdin'], 'Cli-Secret-Pw-Changed-9912\n'));
    expectOk(await cli(dir, ['aliases', 'add', 'info@example.org', 'alice@example.org', 'bob@example.net']));
    expectOk(await cli(dir, ['domains', 'list']));

    const list = await cli(dir, ['audit', 'list', '--json']);
    expectOk(list);
    const items = array(list);
    expect(items.map((e) => [e.action, e.target, e.result])).toEqual([
      ['cli: aliases add', 'info@example.org', 'ok'],
      ['cli: accounts passwd', 'alice@example.org', 'ok'],
      ['cli: accounts add', 'alice@example.org', 'ok'],
      ['cli: domains delete', 'nosuch.org', 'not_found'],
      ['cli: add domain', 'example.org', 'ok'],
    ]);
    expect(items[0]).toMatchObject({ actor: userInfo().username, token_id: null, source: 'cli', summary: { destination: 'alice@example.org, bob@example.net' } });
    expect(items[2]).toMatchObject({ summary: { quota: 1073741824, passwordStdin: true } });
    // --password-stdin is a flag (recorded as true); the password itself never is (the list has no secret, below).
    expect(list.stdout).not.toMatch(/Cli-Secret/);

    const filtered = await cli(dir, ['audit', 'list', '--json', '--action', 'cli: add domain', '--since', '1h']);
    expect(array(filtered).length).toBe(1);
    expect(array(await cli(dir, ['audit', 'list', '--json', '--target', 'alice@example.org'])).length).toBe(2);
    expect(array(await cli(dir, ['audit', 'list', '--json', '--since', '2999-01-01T00:00:00Z'])).length).toBe(0);
    const human = await cli(dir, ['audit', 'list', '--limit', '2']);
    expect(human.stdout).toMatch(/^TIME \(UTC\)\s+WHO\s+FROM\s+ACTION/);
    expect(human.stdout).toMatch(/Showing 1-2 of 5; --offset 2 for more/);

    const bad = await cli(dir, ['audit', 'list', '--since', 'yesterday']);
    expect(bad.code).toBe(2);
    expect(expectOneErrorLine(bad)).toMatch(/--since/);
    const prune = await cli(dir, ['audit', 'prune', '--json']);
    expectOk(prune);
    expect(json(prune)).toMatchObject({ deleted: 0 });
  });
});
