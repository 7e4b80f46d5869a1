import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildCli, expectOk, REPO_ROOT, runCli } from '../../test/helpers/cli.js';
import type { CliResult } from '../../test/helpers/cli.js';
import { createContext } from '../../test/helpers/context.js';
import type { TestContext as AppContext } from '../../test/helpers/context.js';
import { loadSettings } from '../config/settings.js';

/** `mailsvc accounts passwd` as the built binary: a reset ends the mailbox's portal sessions, and --revoke-app-passwords its app passwords. */
let dirs: string[] = [];
const dataDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'mailsvc-passwd-cli-'));
  dirs.push(d);
  return d;
};
// doveadm kick runs on every password change, through the helper run in-process (the CLI as root): /bin/true stands in for doveadm.
const baseEnv = (dir: string): Record<string, string> => ({ MAILSVC_DATA_DIR: dir, MAILSVC_HELPER: 'direct', MAILSVC_DOVEADM: '/bin/true' });
const cli = (dir: string, args: string[], input: string): Promise<CliResult> => runCli(args, { env: baseEnv(dir), input });

async function withCtx<T>(dir: string, fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  const ctx = await createContext(loadSettings(baseEnv(dir), REPO_ROOT), { log: pino({ level: 'silent' }) });
  try {
    return await fn(ctx);
  } finally {
    await ctx.close();
  }
}

/** alice with two app passwords and an open portal session (a row as the portal's sign-in writes it). */
async function seed(dir: string): Promise<{ appPasswords: string[] }> {
  return withCtx(dir, async (ctx) => {
    await ctx.domains.create('example.org');
    const { id } = await ctx.accounts.create({ address: 'alice@example.org', password: 'first-mail-password' });
    const now = Date.now();
    await ctx.db.insertInto('portal_sessions').values({ id_hash: 'a'.repeat(64), account_id: id, created_at: now, last_seen_at: now, expires_at: now + 3_600_000 }).execute();
    const made = [await ctx.appPasswords.create(id, { name: 'phone' }), await ctx.appPasswords.create(id, { name: 'laptop' })];
    return { appPasswords: made.map((m) => m.password) };
  });
}

const state = (dir: string, appPasswords: string[]) =>
  withCtx(dir, async (ctx) => ({
    sessions: (await ctx.db.selectFrom('portal_sessions').select('id_hash').execute()).length,
    logins: await Promise.all(appPasswords.map(async (password) => (await ctx.mailAuth.check({ user: 'alice@example.org', password, protocol: 'imap', remoteIp: '127.0.0.1' })).ok)),
  }));

beforeAll(() => {
  buildCli();
}, 120_000);

afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

describe('mailsvc accounts passwd', { timeout: 120_000 }, () => {
  it('ends the mailbox\'s portal sessions; its app passwords survive', async () => {
    const dir = dataDir();
    const { appPasswords } = await seed(dir);
    expect(await state(dir, appPasswords)).toEqual({ sessions: 1, logins: [true, true] });
    expectOk(await cli(dir, ['accounts', 'passwd', 'alice@example.org', '--password-stdin'], 'second-mail-password\n'));
    expect(await state(dir, appPasswords)).toEqual({ sessions: 0, logins: [true, true] });
  });

  it('--revoke-app-passwords revokes every app password of the mailbox too', async () => {
    const dir = dataDir();
    const { appPasswords } = await seed(dir);
    const r = await cli(dir, ['accounts', 'passwd', 'alice@example.org', '--password-stdin', '--revoke-app-passwords'], 'second-mail-password\n');
    expectOk(r);
    expect(r.stdout).toContain('every app password revoked');
    expect(await state(dir, appPasswords)).toEqual({ sessions: 0, logins: [false, false] });
  });
});
