import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { buildCli, expectOk, expectOneErrorLine, json, REPO_ROOT, runCli, sealedValues } from '../../test/helpers/cli.js';
import type { CliResult } from '../../test/helpers/cli.js';
import { oathtoolCode, oathtoolInstalled } from '../../test/helpers/totp.js';
import { skipNotice } from '../../test/helpers/services.js';
import { createContext } from '../../test/helpers/context.js';
import type { TestContext as AppContext } from '../../test/helpers/context.js';
import { loadSettings } from '../config/settings.js';
import { loadSchema } from '../app/schema.js';
import { sealContext } from '../db/sealed-columns.js';
import { buildApp } from '../http/app.js';
import { AdminCredentials } from '../modules/auth/admin-credentials.js';
import { writeKeyFile } from '../shared/secret-key-file.js';
import { SecretBox } from '../shared/secret-box.js';

const LATEST_SCHEMA = (await loadSchema()).latest;

/** The `mailsvc` command, built and run the way an operator runs it. */
const PASSWORD = 'a-new-password-20-ch';
const haveOathtool = oathtoolInstalled();
if (!haveOathtool) skipNotice('oathtool (Debian package oathtool)', 'not found on PATH');

let dirs: string[] = [];
const dataDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'mailsvc-cli-'));
  dirs.push(d);
  return d;
};
const settingsOf = (dir: string, env: Record<string, string> = {}) => loadSettings({ MAILSVC_DATA_DIR: dir, ...env }, REPO_ROOT);
const openContext = (dir: string, env: Record<string, string> = {}): Promise<AppContext> =>
  createContext(settingsOf(dir, env), { log: pino({ level: 'silent' }) });
const cli = (dir: string, args: string[], env: Record<string, string> = {}, input?: string): Promise<CliResult> =>
  runCli(args, { env: { MAILSVC_DATA_DIR: dir, ...env }, ...(input === undefined ? {} : { input }) });

/** A provider secret pair and a TOTP secret, stored through the services; returns the TOTP secret. */
async function storeSecrets(dir: string, env: Record<string, string> = {}): Promise<string> {
  const ctx = await openContext(dir, env);
  try {
    await ctx.providers.put({ code: 'provider_a', api_key: 'k-123', client_secret: 's-456' });
    return (await ctx.mfa.enrollTotp('admin')).secret;
  } finally {
    await ctx.close();
  }
}

/** The three secrets open under the context's keys to what was stored, and all are sealed with `keyId`. */
async function expectSecretsUnder(ctx: AppContext, keyId: string, totpSecret: string): Promise<void> {
  const sealed = await sealedValues(ctx.db);
  // TOTP secret, the provider's two secrets, and two service keys (app-password-hash, admin-fingerprint).
  expect(sealed).toHaveLength(5);
  for (const s of sealed) expect(s.value.split('.')[1], `${s.table}.${s.column}`).toBe(keyId);
  const provider = await ctx.providers.sendConfig('provider_a');
  expect(provider).toMatchObject({ apiKey: 'k-123', clientSecret: 's-456' });
  const mfa = await ctx.mfa.record();
  expect(ctx.box.open(mfa.totp_secret ?? '', sealContext('admin_mfa', 1, 'totp_secret'))).toBe(totpSecret);
}

beforeAll(() => {
  buildCli();
}, 120_000);

afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

// Each test runs the CLI, which hashes with argon2id: seconds each on a busy 2-core machine.
describe('mailsvc admin set-password', { timeout: 120_000 }, () => {
  it('writes an argon2id hash to the settings file (no longer readable by others), keeps the other lines, and the service signs in with it', async () => {
    const dir = dataDir();
    const conf = join(dir, 'mailsvc.conf');
    writeFileSync(conf, '# site settings\nMAILSVC_MFA_REQUIRED=no\nMAILSVC_MFA_ISSUER=acme\n');
    const r = await cli(dir, ['admin', 'set-password', '--stdin', '--json'], {}, `${PASSWORD}\n`);
    expectOk(r);
    expect(json(r)).toEqual({ ok: true, settings_file: conf, revoked_tokens: 0, restarted: false });

    const text = readFileSync(conf, 'utf8');
    // The file keeps its owner and group (the service may be its group-reader) and loses what others could read: 0644 → 0640.
    expect(statSync(conf).mode & 0o777).toBe(0o640);
    expect(text).not.toContain(PASSWORD);
    expect(text.split('\n').slice(0, 3)).toEqual(['# site settings', 'MAILSVC_MFA_REQUIRED=no', 'MAILSVC_MFA_ISSUER=acme']);
    expect(text).toMatch(/^MAILSVC_ADMIN_PASSWORD_HASH=\$argon2id\$\S+$/m);

    const settings = settingsOf(dir);
    const creds = new AdminCredentials('admin', settings.adminPasswordHash, undefined);
    expect(await creds.check('admin', PASSWORD)).toBe(true);
    expect(await creds.check('admin', `${PASSWORD}x`)).toBe(false);

    // The service on that data dir: the file's MAILSVC_MFA_REQUIRED=no lets the password alone sign in.
    const ctx = await openContext(dir);
    const app = await buildApp(ctx.modules);
    try {
      const ok = await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'admin', password: PASSWORD } });
      expect(ok.statusCode).toBe(200);
      expect(ok.json()).toMatchObject({ token_type: 'bearer', mfa_verified: false });
      const bad = await app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'admin', password: 'correct horse battery staple' } });
      expect(bad.statusCode).toBe(401);
    } finally {
      await app.close();
      await ctx.close();
    }
  });

  // On a terminal (script(1) gives it one): both answers typed at once, as a paste or a fast typist sends them.
  // The second question used to lose what came after the first line and wait for ever.
  it.skipIf(!existsSync('/usr/bin/script'))('asks twice on a terminal and takes two answers that arrive at once; two that differ change nothing', async () => {
    const onTerminal = (dir: string, input: string): { code: number | null; stdout: string; stderr: string } => {
      const r = spawnSync('script', ['-qec', `${process.execPath} ${buildCli()} admin set-password --no-restart`, '/dev/null'], {
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', MAILSVC_DATA_DIR: dir },
        input,
        encoding: 'utf8',
        timeout: 120_000,
      });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    const dir = dataDir();
    const r = await onTerminal(dir, `${PASSWORD}\n${PASSWORD}\n`);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/Repeat it:[\s\S]*Password hash written to/);
    expect(await new AdminCredentials('admin', settingsOf(dir).adminPasswordHash, undefined).check('admin', PASSWORD)).toBe(true);
    const other = dataDir();
    const differ = await onTerminal(other, `${PASSWORD}\n${PASSWORD}x\n`);
    expect(differ.stdout).toMatch(/the two passwords differ; nothing was changed/);
    expect(existsSync(join(other, 'mailsvc.conf'))).toBe(false);
  });

  it('a second run replaces the hash instead of adding a line', async () => {
    const dir = dataDir();
    expectOk(await cli(dir, ['admin', 'set-password', '--stdin'], {}, `${PASSWORD}\n`));
    const first = readFileSync(join(dir, 'mailsvc.conf'), 'utf8');
    const r = await cli(dir, ['admin', 'set-password', '--stdin'], {}, 'another-password-of-20\n');
    expectOk(r);
    expect(r.stdout).toMatch(/Password hash written to .*mailsvc\.conf/);
    const second = readFileSync(join(dir, 'mailsvc.conf'), 'utf8');
    expect(second).not.toBe(first);
    expect(second.match(/MAILSVC_ADMIN_PASSWORD_HASH=/g)).toHaveLength(1);
    const creds = new AdminCredentials('admin', settingsOf(dir).adminPasswordHash, undefined);
    expect(await creds.check('admin', 'another-password-of-20')).toBe(true);
  });

  it('refuses a too-short password with one line on stderr and leaves the file as it was', async () => {
    const dir = dataDir();
    const conf = join(dir, 'mailsvc.conf');
    writeFileSync(conf, 'MAILSVC_MFA_ISSUER=acme\n');
    for (const input of ['short\n', '\n', '']) {
      const r = await cli(dir, ['admin', 'set-password', '--stdin', '--json'], {}, input);
      expect(r.code).not.toBe(0);
      expect(expectOneErrorLine(r)).toMatch(/at least \d+ characters/);
      expect(r.stdout).toBe('');
      expect(readFileSync(conf, 'utf8')).toBe('MAILSVC_MFA_ISSUER=acme\n');
    }
  });
});

describe('mailsvc db migrate', () => {
  it('applies the migrations on a new SQLite database, then nothing on the second run', async () => {
    const dir = dataDir();
    const first = await cli(dir, ['db', 'migrate', '--json']);
    expectOk(first);
    const body = json(first);
    expect(body.schema_version).toBe(LATEST_SCHEMA);
    expect((body.applied as string[])[0]).toBe('0001_auth');
    expect((body.applied as string[]).at(-1)).toBe(LATEST_SCHEMA);
    expect(existsSync(join(dir, 'mailsvc.db'))).toBe(true);

    const second = await cli(dir, ['db', 'migrate', '--json']);
    expectOk(second);
    expect(json(second)).toEqual({ applied: [], schema_version: LATEST_SCHEMA });
  });
});

describe('mailsvc admin mfa reset', () => {
  it.skipIf(!haveOathtool)('turns TOTP off, erases its secret and revokes the access tokens', async () => {
    const dir = dataDir();
    let ctx = await openContext(dir);
    const { secret } = await ctx.mfa.enrollTotp('admin');
    await ctx.mfa.confirmTotp(oathtoolCode(secret));
    const token = (await ctx.tokens.issue('admin', true)).access_token;
    expect((await ctx.mfa.status()).methods).toEqual(['totp']);
    expect(await ctx.tokens.validate(token)).not.toBeNull();
    await ctx.close();

    const r = await cli(dir, ['admin', 'mfa', 'reset', '--json']);
    expectOk(r);
    expect(json(r)).toMatchObject({ ok: true, revoked_tokens: 1, status: { totp_enabled: false, sms_enabled: false, methods: [] } });

    ctx = await openContext(dir);
    try {
      const row = await ctx.mfa.record();
      expect(row).toMatchObject({ totp_enabled: 0, totp_secret: null, totp_confirmed_at: null, sms_enabled: 0 });
      expect(await ctx.tokens.validate(token)).toBeNull();
    } finally {
      await ctx.close();
    }
  });
});

describe('mailsvc secrets rotate-key', () => {
  it('with the key file: the new key first in the file, every sealed value moved to it; --drop-old removes the old key', async () => {
    const dir = dataDir();
    const totpSecret = await storeSecrets(dir);
    const keyFile = join(dir, 'secret.key');
    const oldText = readFileSync(keyFile, 'utf8');
    const oldKey = Buffer.from(oldText.trim(), 'base64');

    const r = await cli(dir, ['secrets', 'rotate-key', '--json']);
    expectOk(r);
    const newText = readFileSync(keyFile, 'utf8');
    expect(newText).not.toBe(oldText);
    const lines = newText.split('\n').filter((l) => l.trim() !== '');
    // 4 = TOTP secret, provider client secret and API key, and the app-password hash key.
    // The old key stays until --drop-old: a service still running on it may seal with it.
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe(oldText.trim());
    const newId = new SecretBox(Buffer.from(lines[0] ?? '', 'base64')).keyId;
    expect(json(r)).toEqual({ key_id: newId, resealed: 5, already_current: 0, key_source: keyFile });
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);

    const ctx = await openContext(dir);
    try {
      await expectSecretsUnder(ctx, newId, totpSecret);
      const [first] = await sealedValues(ctx.db);
      expect(() => new SecretBox(oldKey).open(first?.value ?? '', sealContext(first?.table ?? '', first?.key ?? '', first?.column ?? ''))).toThrow();
      // A service still on the old key writes a value sealed with it before its restart.
      const stale = new SecretBox(oldKey).seal('written-meanwhile', sealContext('sms_providers', 'provider_a', 'api_key'));
      await ctx.db.updateTable('sms_providers').set({ api_key: stale }).where('code', '=', 'provider_a').execute();
    } finally {
      await ctx.close();
    }

    const drop = await cli(dir, ['secrets', 'rotate-key', '--drop-old', '--json']);
    expectOk(drop);
    expect(json(drop)).toMatchObject({ key_id: newId, resealed: 1, dropped_keys: 1 });
    expect(readFileSync(keyFile, 'utf8').trim()).toBe(lines[0]);
    const after = await openContext(dir);
    try {
      expect((await after.providers.sendConfig('provider_a')).apiKey).toBe('written-meanwhile');
    } finally {
      await after.close();
    }
  });

  it('with MAILSVC_SECRET_KEY and MAILSVC_SECRET_KEY_PREVIOUS: re-seals under the key from the environment', async () => {
    const dir = dataDir();
    const oldKey = randomBytes(32).toString('base64');
    const newKey = randomBytes(32).toString('base64');
    const totpSecret = await storeSecrets(dir, { MAILSVC_SECRET_KEY: oldKey });

    const r = await cli(dir, ['secrets', 'rotate-key', '--json'], { MAILSVC_SECRET_KEY: newKey, MAILSVC_SECRET_KEY_PREVIOUS: oldKey });
    expectOk(r);
    const newId = new SecretBox(Buffer.from(newKey, 'base64')).keyId;
    expect(json(r)).toEqual({ key_id: newId, resealed: 5, already_current: 0, key_source: 'environment' });
    expect(existsSync(join(dir, 'secret.key'))).toBe(false);

    const again = await cli(dir, ['secrets', 'rotate-key', '--json'], { MAILSVC_SECRET_KEY: newKey });
    expectOk(again);
    expect(json(again)).toMatchObject({ resealed: 0, already_current: 5 });

    const ctx = await openContext(dir, { MAILSVC_SECRET_KEY: newKey });
    try {
      await expectSecretsUnder(ctx, newId, totpSecret);
    } finally {
      await ctx.close();
    }
  });

  it('with the key file, also moves values sealed under a key named in MAILSVC_SECRET_KEY_PREVIOUS', async () => {
    const dir = dataDir();
    const envKey = randomBytes(32).toString('base64');
    const totpSecret = await storeSecrets(dir, { MAILSVC_SECRET_KEY: envKey });
    writeKeyFile(join(dir, 'secret.key'), [randomBytes(32)]); // what a first start without MAILSVC_SECRET_KEY writes

    const r = await cli(dir, ['secrets', 'rotate-key', '--json'], { MAILSVC_SECRET_KEY_PREVIOUS: envKey });
    expectOk(r);
    expect(json(r)).toMatchObject({ resealed: 5, already_current: 0 });
    const ctx = await openContext(dir);
    try {
      await expectSecretsUnder(ctx, String(json(r).key_id), totpSecret);
    } finally {
      await ctx.close();
    }
  });

  it('without the old key in MAILSVC_SECRET_KEY_PREVIOUS: fails with one line and changes nothing', async () => {
    const dir = dataDir();
    const oldKey = randomBytes(32).toString('base64');
    const totpSecret = await storeSecrets(dir, { MAILSVC_SECRET_KEY: oldKey });
    const r = await cli(dir, ['secrets', 'rotate-key'], { MAILSVC_SECRET_KEY: randomBytes(32).toString('base64') });
    expect(r.code).not.toBe(0);
    expect(expectOneErrorLine(r)).toMatch(/MAILSVC_SECRET_KEY_PREVIOUS/);
    const ctx = await openContext(dir, { MAILSVC_SECRET_KEY: oldKey });
    try {
      await expectSecretsUnder(ctx, ctx.box.keyId, totpSecret);
    } finally {
      await ctx.close();
    }
  });
});

describe('mailsvc errors and help', () => {
  it('a bad setting, in the environment or in the settings file, exits 78 with one line naming the key', async () => {
    const dir = dataDir();
    const fromEnv = await cli(dir, ['db', 'migrate'], { MAILSVC_API_PORT: 'abc' });
    expect(fromEnv.code).toBe(78);
    expect(expectOneErrorLine(fromEnv)).toContain('MAILSVC_API_PORT');

    writeFileSync(join(dir, 'mailsvc.conf'), 'MAILSVC_MFA_REQUIRED=maybe\n');
    const fromFile = await cli(dir, ['admin', 'mfa', 'reset']);
    expect(fromFile.code).toBe(78);
    expect(expectOneErrorLine(fromFile)).toContain('MAILSVC_MFA_REQUIRED');
  });

  it('a bad MAILSVC_LOG_LEVEL exits 78 with one line naming the key, not a pino stack', async () => {
    const res = await cli(dataDir(), ['db', 'migrate'], { MAILSVC_LOG_LEVEL: 'verbose' });
    expect(res.code).toBe(78);
    expect(expectOneErrorLine(res)).toContain('MAILSVC_LOG_LEVEL');
  });

  it('an unreachable database exits non-zero with one line that says what to check', async () => {
    const dir = dataDir();
    for (const args of [['db', 'migrate'], ['admin', 'mfa', 'reset'], ['secrets', 'rotate-key']]) {
      const r = await cli(dir, args, { MAILSVC_DATABASE_URL: 'postgres://postgres@127.0.0.1:1/x' });
      expect(r.code, args.join(' ')).not.toBe(0);
      expect(expectOneErrorLine(r)).toMatch(/MAILSVC_DATABASE_URL/);
    }
  });

  it('--help lists the commands', async () => {
    const r = await runCli(['--help']);
    expectOk(r);
    for (const cmd of ['serve', 'admin', 'db', 'secrets']) expect(r.stdout).toMatch(new RegExp(`^\\s+${cmd}\\b`, 'm'));
    const admin = await runCli(['admin', '--help']);
    expectOk(admin);
    expect(admin.stdout).toMatch(/set-password/);
    expect(admin.stdout).toMatch(/mfa/);
  });
});
