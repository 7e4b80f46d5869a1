import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildCli, expectOk, expectOneErrorLine, REPO_ROOT, runCli } from '../../test/helpers/cli.js';
import { createContext } from '../../test/helpers/context.js';
import { loadSettings } from '../config/settings.js';

/** The CLI never writes a control character of the data to the terminal, and refuses them in names. */
const ESC = '\u001b';
let dir: string;
const env = (): Record<string, string> => ({ MAILSVC_DATA_DIR: dir, MAILSVC_HELPER: 'direct', MAILSVC_DOVEADM: '/bin/true' });
const cli = (args: string[]) => runCli(args, { env: env() });

beforeAll(async () => {
  buildCli();
  dir = mkdtempSync(join(tmpdir(), 'mailsvc-escape-cli-'));
  expectOk(await cli(['db', 'migrate']));
  // A row written before names were checked (or by hand): the CLI must still print it safely.
  const ctx = await createContext(loadSettings(env(), REPO_ROOT), { log: pino({ level: 'silent' }) });
  try {
    await ctx.domains.create('example.org');
    await ctx.accounts.create({ address: 'eve@example.org', password: 'first-mail-password', display_name: 'Eve' });
    await ctx.db.updateTable('accounts').set({ display_name: `Eve${ESC}]0;owned\u0007${ESC}[2J\rAlice` }).where('address', '=', 'eve@example.org').execute();
  } finally {
    await ctx.close();
  }
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('control characters in the CLI', () => {
  it('a stored name with escape sequences is printed escaped, in tables and in show; --json keeps JSON escapes', async () => {
    for (const args of [['accounts', 'list'], ['accounts', 'show', 'eve@example.org']]) {
      const r = await cli(args);
      expectOk(r);
      const controls = [...r.stdout].filter((ch) => ch !== '\n' && (ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f));
      expect(controls, args.join(' ')).toEqual([]);
      expect(r.stdout).toContain('Eve\\u001b]0;owned\\u0007\\u001b[2J\\u000dAlice');
    }
    const json = await cli(['accounts', 'show', 'eve@example.org', '--json']);
    expectOk(json);
    expect(json.stdout).not.toContain(ESC);
    expect((JSON.parse(json.stdout) as { display_name: string }).display_name).toBe(`Eve${ESC}]0;owned\u0007${ESC}[2J\rAlice`);
  });

  it('names with control characters are refused: exit 2, one line, nothing created', async () => {
    for (const args of [['add', 'domain', `bad${ESC}[2J.example`], ['add', 'domain', 'tab.example\t'], ['accounts', 'set', 'eve@example.org', '--name', `x\ny`]]) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(expectOneErrorLine(r)).toMatch(/must not contain control characters/);
      expect(r.stderr).not.toContain(ESC);
    }
    const list = await cli(['domains', 'list', '--json']);
    expect(JSON.stringify(JSON.parse(list.stdout))).not.toMatch(/bad|tab\.example/);
  });
});
