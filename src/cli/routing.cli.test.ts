import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCli, expectOk, expectOneErrorLine, runCli } from '../../test/helpers/cli.js';
import type { CliResult } from '../../test/helpers/cli.js';

/** The host CLI refuses a mailbox and an alias at one address (either order) and alias loops: exit 3, one line, nothing written. */
let dir = '';
const cli = (args: string[], input?: string): Promise<CliResult> =>
  runCli(args, { env: { MAILSVC_DATA_DIR: dir, MAILSVC_DOVEADM: '/bin/true' }, ...(input === undefined ? {} : { input }) });

beforeAll(() => {
  buildCli();
}, 120_000);
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('mailsvc accounts add / aliases add: routing rules', () => {
  it('refuses an alias at a mailbox, a mailbox at an alias, and a loop, with exit 3 naming the address or the loop', { timeout: 120_000 }, async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-routing-cli-'));
    expectOk(await cli(['db', 'migrate']));
    expectOk(await cli(['add', 'domain', 'example.org']));
    expectOk(await cli(['accounts', 'add', 'alice@example.org', '--password-stdin'], 'Cli-Secret-Pw-7781\n'));
    expectOk(await cli(['aliases', 'add', 'info@example.org', 'alice@example.org']));

    const aliasAtMailbox = await cli(['aliases', 'add', 'alice@example.org', 'bob@example.net']);
    expect(aliasAtMailbox.code).toBe(3);
    expect(expectOneErrorLine(aliasAtMailbox)).toMatch(/alice@example\.org is a mailbox/);

    const mailboxAtAlias = await cli(['accounts', 'add', 'info@example.org', '--password-stdin'], 'Cli-Secret-Pw-7782\n');
    expect(mailboxAtAlias.code).toBe(3);
    expect(expectOneErrorLine(mailboxAtAlias)).toMatch(/info@example\.org is an alias/);

    expectOk(await cli(['aliases', 'add', 'a@example.org', 'b@example.org']));
    const loop = await cli(['aliases', 'add', 'b@example.org', 'a@example.org']);
    expect(loop.code).toBe(3);
    expect(expectOneErrorLine(loop)).toBe('mailsvc: Alias loop: b@example.org → a@example.org → b@example.org; mail would go round for ever');

    const aliases = JSON.parse((await cli(['aliases', 'list', '--json'])).stdout) as { items: { source: string }[] };
    expect(aliases.items.map((a) => a.source)).toEqual(['a@example.org', 'info@example.org']);
    const accounts = JSON.parse((await cli(['accounts', 'list', '--json'])).stdout) as { items: { address: string }[] };
    expect(accounts.items.map((a) => a.address)).toEqual(['alice@example.org']);
  });
});
