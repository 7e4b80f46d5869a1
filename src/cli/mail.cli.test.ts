import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildCli, expectOk, expectOneErrorLine, json, REPO_ROOT, runCli } from '../../test/helpers/cli.js';
import type { CliResult } from '../../test/helpers/cli.js';
import { createContext } from '../../test/helpers/context.js';
import type { TestContext as AppContext } from '../../test/helpers/context.js';
import { loadSettings } from '../config/settings.js';
import { verifyMailPassword } from '../modules/accounts/mail-password.js';

/** The mail commands (domains, accounts, app passwords, aliases, send limits), run as the built binary. */
const PASSWORD = 'first-mail-password';
const APP_PASSWORD = /^[a-z2-7]{12}\.[a-z2-7]{32}$/;

let dirs: string[] = [];
const dataDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'mailsvc-mail-cli-'));
  dirs.push(d);
  return d;
};
// doveadm kick runs on every password change and delete, through the helper run in-process (the
// CLI as root): /bin/true stands in for doveadm.
const baseEnv = (dir: string): Record<string, string> => ({ MAILSVC_DATA_DIR: dir, MAILSVC_HELPER: 'direct', MAILSVC_DOVEADM: '/bin/true' });
const cli = (dir: string, args: string[], opts: { input?: string; env?: Record<string, string> } = {}): Promise<CliResult> =>
  runCli(args, { env: { ...baseEnv(dir), ...opts.env }, ...(opts.input === undefined ? {} : { input: opts.input }) });

async function withCtx<T>(dir: string, fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  const ctx = await createContext(loadSettings(baseEnv(dir), REPO_ROOT), { log: pino({ level: 'silent' }) });
  try {
    return await fn(ctx);
  } finally {
    await ctx.close();
  }
}

/** example.org with alice@example.org, made through the services (faster than two spawns). */
async function seed(dir: string): Promise<void> {
  await withCtx(dir, async (ctx) => {
    await ctx.domains.create('example.org');
    await ctx.accounts.create({ address: 'alice@example.org', password: PASSWORD, display_name: 'Alice' });
  });
}

const passwordHash = (dir: string, address: string): Promise<string | undefined> =>
  withCtx(dir, async (ctx) => (await ctx.db.selectFrom('accounts').select('password_hash').where('address', '=', address).executeTakeFirst())?.password_hash);

/** Exit code and the one stderr line. */
async function expectFailure(p: Promise<CliResult>, code: number, message: RegExp): Promise<void> {
  const r = await p;
  expect(r.code, r.stderr).toBe(code);
  expect(expectOneErrorLine(r)).toMatch(message);
  expect(r.stdout).toBe('');
}

beforeAll(() => {
  buildCli();
}, 120_000);

afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

describe('mailsvc add domain / domains', () => {
  it('never creates a database: no file is exit 78 naming where it looked and db migrate; an unmigrated one is exit 78 too', async () => {
    const dir = dataDir();
    const db = join(dir, 'mailsvc.db');
    await expectFailure(cli(dir, ['domains', 'list']), 78, new RegExp(`no database at ${db.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(data directory ${dir}.*run mailsvc db migrate`));
    await expectFailure(cli(dir, ['add', 'domain', 'example.org']), 78, /no database at .*run mailsvc db migrate/);
    expect(existsSync(db)).toBe(false);
    expect(existsSync(join(dir, 'secret.key'))).toBe(false);
    expect(await cli(dir, ['--help'])).toMatchObject({ code: 0 });
    // A file that is not a migrated database (an empty one, a wrong path's leftover) is not used either.
    writeFileSync(db, '');
    await expectFailure(cli(dir, ['domains', 'list']), 78, /has schema none, this mailsvc needs \S+: run mailsvc db migrate/);
    const migrated = await cli(dir, ['db', 'migrate', '--json']);
    expectOk(migrated);
    expect((json(migrated) as { applied: string[] }).applied[0]).toBe('0001_auth');
  });

  it('adds, lists and shows a domain; a duplicate exits 3; a bad name or --limit 0 exit 2, --generate-dkim without a secret key 78, and add nothing', async () => {
    const dir = dataDir();
    expectOk(await cli(dir, ['db', 'migrate']));
    const added = await cli(dir, ['add', 'domain', 'example.org', '--json']);
    expectOk(added);
    expect(json(added)).toMatchObject({ id: 1, name: 'example.org', active: true });

    await Promise.all([
      expectFailure(cli(dir, ['add', 'domain', 'Example.ORG.']), 3, /Domain example\.org already exists/),
      expectFailure(cli(dir, ['add', 'domain', 'bad_domain']), 2, /Invalid domain name "bad_domain"/),
      // The DKIM key must be sealed: without a key file nothing is added (docs/dns.md; the dns tests cover the success).
      expectFailure(cli(dir, ['add', 'domain', 'other.org', '--generate-dkim']), 78, /no key file at .*MAILSVC_SECRET_KEY/),
      expectFailure(cli(dir, ['domains', 'list', '--limit', '0']), 2, /--limit.*'0' is invalid/),
    ]);

    const [list, text, byName, byId, human, missing] = await Promise.all([
      cli(dir, ['domains', 'list', '--json']),
      cli(dir, ['domains', 'list']),
      cli(dir, ['domains', 'show', 'example.org', '--json']),
      cli(dir, ['domains', 'show', '1', '--json']),
      cli(dir, ['domains', 'show', 'example.org']),
      cli(dir, ['domains', 'show', 'nope.org']),
    ]);
    for (const r of [list, text, byName, byId, human]) expectOk(r);
    expect(json(list)).toMatchObject({ total: 1, limit: 50, offset: 0, items: [{ name: 'example.org', accounts: 0, aliases: 0 }] });
    expect(text.stdout).toMatch(/^NAME\s+ID\s+ACTIVE\s+ACCOUNTS\s+ALIASES\s+CREATED$/m);
    expect(text.stdout).toMatch(/^example\.org\s+1\s+yes\s+0\s+0\s+\d{4}-\d\d-\d\d$/m);
    expect(json(byId)).toEqual(json(byName));
    expect(human.stdout).toMatch(/^Domain example\.org \(id 1\)\n\s+active:\s+yes$/m);
    expect(missing.code).toBe(4);
    expect(expectOneErrorLine(missing)).toMatch(/Domain nope\.org not found/);
  });
});

// add, passwd and app-passwords hash with argon2id in a CLI process: seconds each on a busy 2-core machine.
describe('mailsvc accounts', { timeout: 120_000 }, () => {
  it('add --password-stdin stores an {ARGON2ID} hash and never prints it; an unknown domain exits 2, a duplicate 3, and nothing is written', async () => {
    const dir = dataDir();
    expectOk(await cli(dir, ['db', 'migrate']));
    expectOk(await cli(dir, ['add', 'domain', 'example.org']));
    const r = await cli(dir, ['accounts', 'add', 'Alice@Example.org', '--name', 'Alice', '--quota', '2G', '--password-stdin', '--json'], { input: `${PASSWORD}\n` });
    expectOk(r);
    expect(json(r)).toMatchObject({ address: 'alice@example.org', display_name: 'Alice', quota_bytes: 2 * 2 ** 30, active: true, require_app_password: false });
    const hash = await passwordHash(dir, 'alice@example.org');
    expect(hash?.startsWith('{ARGON2ID}$argon2id$')).toBe(true);
    expect(await verifyMailPassword(hash ?? '', PASSWORD)).toBe(true);

    const [show, byId] = await Promise.all([cli(dir, ['accounts', 'show', 'alice@example.org', '--json']), cli(dir, ['accounts', 'show', '1', '--json'])]);
    expectOk(show);
    expect(Object.keys(json(show)).filter((k) => /pass|hash/i.test(k) && k !== 'require_app_password')).toEqual([]);
    expect(show.stdout).not.toContain('argon2');
    expect(json(byId)).toEqual(json(show));

    await Promise.all([
      expectFailure(cli(dir, ['accounts', 'add', 'bob@nope.org', '--password-stdin'], { input: `${PASSWORD}\n` }), 2, /Unknown domain nope\.org: add it first/),
      expectFailure(cli(dir, ['accounts', 'add', 'ALICE@example.org', '--password-stdin'], { input: `${PASSWORD}\n` }), 3, /already exists/),
      expectFailure(cli(dir, ['accounts', 'add', 'bob@example.org', '--password-stdin'], { input: 'short\n' }), 2, /Password too short/),
      expectFailure(cli(dir, ['accounts', 'add', 'bob@example.org']), 2, /no terminal.*--password-stdin/),
    ]);
    const all = await withCtx(dir, (ctx) => ctx.db.selectFrom('accounts').select('address').execute());
    expect(all).toEqual([{ address: 'alice@example.org' }]);
    expect(await passwordHash(dir, 'alice@example.org')).toBe(hash);
  });

  it('set changes only the given fields; bad values or no option exit 2 and change nothing', async () => {
    const dir = dataDir();
    await seed(dir);
    const before = json(await cli(dir, ['accounts', 'show', 'alice@example.org', '--json']));
    const bad: [string[], RegExp][] = [
      [['--quota', 'abc'], /--quota.*'abc' is invalid/],
      [['--quota', '2000T'], /--quota.*up to 1024T/],
      [['--send-rate-per-minute', '-1'], /--send-rate-per-minute.*'-1' is invalid.*0 to 1000000/],
      [['--active', 'maybe'], /--active.*Use yes or no/],
      [[], /nothing to change: give one or more of --name, --quota, --active, --require-app-password, --send-rate-burst/],
    ];
    await Promise.all(bad.map(([args, message]) => expectFailure(cli(dir, ['accounts', 'set', 'alice@example.org', ...args]), 2, message)));
    expect(json(await cli(dir, ['accounts', 'show', 'alice@example.org', '--json']))).toEqual(before);

    const set = await cli(dir, [
      'accounts', 'set', 'alice@example.org', '--name', 'Alice B', '--quota', '512M', '--active', 'no',
      '--require-app-password', 'yes', '--send-rate-per-minute', '5', '--send-rate-burst', '3', '--json',
    ]);
    expectOk(set);
    expect(json(set)).toMatchObject({
      display_name: 'Alice B', quota_bytes: 512 * 2 ** 20, active: false, require_app_password: true,
      send_rate_per_minute: 5, send_rate_burst: 3, send_rate_per_hour: 0,
    });
    const [list, show] = await Promise.all([cli(dir, ['accounts', 'list']), cli(dir, ['accounts', 'show', 'alice@example.org'])]);
    expect(list.stdout).toMatch(/^ADDRESS\s+NAME\s+QUOTA\s+ACTIVE\s+APP-PW-ONLY$/m);
    expect(list.stdout).toMatch(/^alice@example\.org\s+Alice B\s+512\.0 MiB\s+no\s+yes$/m);
    expect(show.stdout).toMatch(/^\s+per minute\s+5\s+5$/m);
  });

  it('passwd replaces the hash (the old password stops working); a weak one exits 2 and keeps it', async () => {
    const dir = dataDir();
    await seed(dir);
    const old = await passwordHash(dir, 'alice@example.org');
    await expectFailure(cli(dir, ['accounts', 'passwd', 'alice@example.org', '--password-stdin'], { input: 'short\n' }), 2, /Password too short/);
    expect(await passwordHash(dir, 'alice@example.org')).toBe(old);
    await expectFailure(cli(dir, ['accounts', 'passwd', 'nobody@example.org', '--password-stdin'], { input: 'another-password\n' }), 4, /not found/);

    const r = await cli(dir, ['accounts', 'passwd', 'alice@example.org', '--password-stdin', '--json'], { input: 'another-password\n' });
    expectOk(r);
    expect(json(r)).toEqual({ ok: true, id: 1, address: 'alice@example.org' });
    const now = await passwordHash(dir, 'alice@example.org');
    expect(now).not.toBe(old);
    expect(now?.startsWith('{ARGON2ID}$argon2id$')).toBe(true);
    expect(await verifyMailPassword(now ?? '', 'another-password')).toBe(true);
    expect(await verifyMailPassword(now ?? '', PASSWORD)).toBe(false);
  });

  it('app-passwords: add prints the password once, list never shows it, revoke works once (then exit 4)', async () => {
    const dir = dataDir();
    await seed(dir);
    const made = await cli(dir, ['accounts', 'app-passwords', 'add', 'alice@example.org', '--name', 'Thunderbird', '--json']);
    expectOk(made);
    const { id, password } = json(made) as { id: string; password: string };
    expect(password).toMatch(APP_PASSWORD);
    expect(password.startsWith(`${id}.`)).toBe(true);
    const text = await cli(dir, ['accounts', 'app-passwords', 'add', '1', '--name', 'Phone', '--expires', '2099-01-01T00:00:00Z']);
    expectOk(text);
    const second = /^\s+([a-z2-7]{12}\.[a-z2-7]{32})$/m.exec(text.stdout)?.[1] ?? '';
    expect(second).toMatch(APP_PASSWORD);
    expect(text.stdout).toMatch(/will not be shown again/);
    await expectFailure(cli(dir, ['accounts', 'app-passwords', 'add', 'alice@example.org', '--name', 'x', '--expires', '2001-01-01T00:00:00Z']), 2, /in the future/);

    const [list, human] = await Promise.all([
      cli(dir, ['accounts', 'app-passwords', 'list', 'alice@example.org', '--json']),
      cli(dir, ['accounts', 'app-passwords', 'list', 'alice@example.org']),
    ]);
    expect(json(list)).toMatchObject({ account: 'alice@example.org', items: [{ id, name: 'Thunderbird', active: true }, { name: 'Phone', expires_at: '2099-01-01T00:00:00.000Z' }] });
    expect(human.stdout).toMatch(new RegExp(`^${id}\\s+Thunderbird\\s`, 'm'));
    for (const r of [list, human]) for (const secret of [password, second]) expect(r.stdout).not.toContain(secret.split('.')[1]);

    expectOk(await cli(dir, ['accounts', 'app-passwords', 'revoke', 'alice@example.org', id, '--json']));
    await expectFailure(cli(dir, ['accounts', 'app-passwords', 'revoke', 'alice@example.org', id]), 4, new RegExp(`App password ${id} not found`));
    expect((json(await cli(dir, ['accounts', 'app-passwords', 'list', '1', '--json'])).items as unknown[]).length).toBe(1);
  });

  it('sync-send-limits writes <data dir>/send-limits.json with the effective limits: 0 inherits MAILSVC_SEND_RATE_*', async () => {
    const dir = dataDir();
    await seed(dir);
    await withCtx(dir, (ctx) => ctx.accounts.create({ address: 'bob@example.org', password: PASSWORD, send_rate_per_minute: 5 }));
    const file = join(dir, 'send-limits.json');
    rmSync(file, { force: true });
    const env = { MAILSVC_SEND_RATE_PER_MINUTE: '30', MAILSVC_SEND_RATE_PER_DAY: '1000' };
    const r = await cli(dir, ['accounts', 'sync-send-limits', '--json'], { env });
    expectOk(r);
    const defaults = { burst: 0, per_minute: 30, per_hour: 0, per_day: 1000, per_week: 0, per_month: 0 };
    expect(json(r)).toEqual({ accounts: 2, defaults, written_to: file });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      'alice@example.org': defaults,
      'bob@example.org': { ...defaults, per_minute: 5 },
    });
    const [text, page] = await Promise.all([cli(dir, ['accounts', 'sync-send-limits'], { env }), cli(dir, ['accounts', 'list', '--limit', '1'])]);
    expect(page.stdout).toMatch(/^alice@example\.org .*\nShowing 1-1 of 2; --offset 1 for more\n$/m);
    expect(text.stdout).toMatch(/Send limits of 2 account\(s\) written to .*send-limits\.json/);
    expect(text.stdout).toMatch(/per minute 30, per hour 0, per day 1000/);
  });
});

describe('mailsvc aliases, and deleting', { timeout: 120_000 }, () => {
  it('aliases add/list/delete; a domain is kept while it has accounts or aliases (exit 3); accounts delete needs --yes without a terminal', async () => {
    const dir = dataDir();
    await seed(dir);
    const added = await cli(dir, ['aliases', 'add', 'Info@example.org', 'alice@example.org', 'bob@example.net,carol@example.com', '--json']);
    expectOk(added);
    expect(json(added)).toMatchObject({ source: 'info@example.org', domain: 'example.org', destinations: ['alice@example.org', 'bob@example.net', 'carol@example.com'] });
    const [list, text] = await Promise.all([
      cli(dir, ['aliases', 'list', '--domain', 'example.org', '--json']),
      cli(dir, ['aliases', 'list']),
      expectFailure(cli(dir, ['aliases', 'add', 'info@nope.org', 'alice@example.org']), 2, /Unknown domain nope\.org/),
      expectFailure(cli(dir, ['aliases', 'add', 'info@example.org', 'alice@example.org']), 3, /already exists/),
      expectFailure(cli(dir, ['accounts', 'delete', 'alice@example.org']), 2, /not deleting alice@example\.org: pass --yes/),
    ]);
    expect(json(list)).toMatchObject({ total: 1, items: [{ source: 'info@example.org' }] });
    expect(text.stdout).toMatch(/^info@example\.org\s+alice@example\.org, bob@example\.net, carol@example\.com\s+1\s+yes$/m);

    expect(await passwordHash(dir, 'alice@example.org')).toBeDefined();

    expect(json(await cli(dir, ['aliases', 'delete', 'info@example.org', '--json']))).toEqual({ ok: true, deleted: 'info@example.org' });
    await expectFailure(cli(dir, ['aliases', 'delete', 'info@example.org']), 4, /Alias info@example\.org not found/);
    await expectFailure(cli(dir, ['domains', 'delete', 'example.org']), 3, /still has accounts or aliases/);
    expect(json(await cli(dir, ['accounts', 'delete', 'alice@example.org', '--yes', '--json']))).toEqual({ ok: true, deleted: 'alice@example.org' });
    expect(await passwordHash(dir, 'alice@example.org')).toBeUndefined();
    expect(JSON.parse(readFileSync(join(dir, 'send-limits.json'), 'utf8'))).toEqual({});

    const gone = await cli(dir, ['domains', 'delete', 'example.org']);
    expectOk(gone);
    expect(gone.stdout).toBe('Domain example.org deleted.\n');
    expect(await withCtx(dir, (ctx) => ctx.domains.list({ limit: 10, offset: 0 }))).toMatchObject({ total: 0 });
  });

  it('a command builds only what it uses: --help opens no database; domains list never touches Redis or the key file', async () => {
    const dir = dataDir();
    // An unreachable database and Redis: --help does not notice.
    const help = await runCli(['--help'], { env: { MAILSVC_DATA_DIR: dir, MAILSVC_DATABASE_URL: 'postgres://x@127.0.0.1:1/x', MAILSVC_REDIS_URL: 'redis://127.0.0.1:1' } });
    expectOk(help);
    expect(readdirSync(dir)).toEqual([]);
    expectOk(await cli(dir, ['db', 'migrate']));
    await seed(dir);
    rmSync(join(dir, 'secret.key'));
    // Redis unreachable and no key file: domains list still answers.
    const list = await cli(dir, ['domains', 'list', '--json'], { env: { MAILSVC_REDIS_URL: 'redis://127.0.0.1:1' } });
    expectOk(list);
    expect(json(list)).toMatchObject({ total: 1, items: [{ name: 'example.org' }] });
    expect(existsSync(join(dir, 'secret.key'))).toBe(false);
    // --search: the names containing a text (the API's ?q=), found in the database.
    expect(json(await cli(dir, ['domains', 'list', '--search', 'AMPLE.O', '--json'], { env: { MAILSVC_REDIS_URL: 'redis://127.0.0.1:1' } }))).toMatchObject({ total: 1, items: [{ name: 'example.org' }] });
    const none = await cli(dir, ['domains', 'list', '--search', 'nothing-here'], { env: { MAILSVC_REDIS_URL: 'redis://127.0.0.1:1' } });
    expectOk(none);
    expect(none.stdout).toMatch(/No domain name contains "nothing-here"/);
    await expectFailure(cli(dir, ['domains', 'list', '--search', 'a b'], { env: { MAILSVC_REDIS_URL: 'redis://127.0.0.1:1' } }), 2, /letters, digits, dots and hyphens/);
    // A command that does keep state in Redis says so in one line.
    await expectFailure(cli(dir, ['accounts', 'sync-send-limits'], { env: { MAILSVC_REDIS_URL: 'redis://127.0.0.1:1' } }), 69, /Redis/);
  });

  it('--help lists the mail commands; a usage error is one line with exit 2', async () => {
    const [r, accounts] = await Promise.all([runCli(['--help']), runCli(['accounts', '--help'])]);
    expectOk(r);
    for (const cmd of ['add', 'domains', 'accounts', 'aliases']) expect(r.stdout).toMatch(new RegExp(`^\\s+${cmd}\\b`, 'm'));
    for (const sub of ['add', 'list', 'show', 'set', 'passwd', 'delete', 'app-passwords', 'sync-send-limits']) expect(accounts.stdout).toMatch(new RegExp(`^\\s+${sub}\\b`, 'm'));
    const dir = dataDir();
    await Promise.all([
      expectFailure(cli(dir, ['accounts', 'show']), 2, /missing required argument 'account' \(see mailsvc accounts show --help\)/),
      expectFailure(cli(dir, ['accounts', 'frobnicate']), 2, /unknown command 'frobnicate'/),
      expectFailure(cli(dir, ['domains', 'list', '--bogus']), 2, /unknown option '--bogus'/),
      expectFailure(cli(dir, ['accounts', 'app-passwords', 'add', 'alice@example.org']), 2, /required option '--name <name>' not specified/),
    ]);
    expect(existsSync(join(dir, 'mailsvc.db'))).toBe(false);
  });
});
