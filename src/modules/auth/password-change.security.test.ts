import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, expectOk, json, runCli } from '../../../test/helpers/cli.js';
import { createTestDatabase, dialectAvailable, DIALECTS } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call, login } from '../../../test/helpers/flows.js';
import { isolatedRedisUrl, redisAvailable } from '../../../test/helpers/redis.js';

// Changing the administrator password ends every session: at the next start
// with another password (one instance, and another instance sharing Redis),
// and at once with `mailsvc admin set-password`.

const NEW_PASSWORD = 'a-quite-different-password';
const NO_MFA = { MAILSVC_MFA_REQUIRED: 'no' };

async function tokenOf(t: TestApp, password?: string): Promise<string> {
  const res = await login(t, password);
  expect(res.status).toBe(200);
  return `Bearer ${String((res.body as { access_token: string }).access_token)}`;
}

const status = async (t: TestApp, bearer: string): Promise<number> => (await call(t, 'GET', '/auth/mfa', bearer)).status;

/** Waits until `check` holds, up to `ms` (generous: a busy 2-core machine). */
async function eventually(check: () => Promise<boolean>, ms = 30_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

describe.each(DIALECTS)('a new administrator password at start revokes every token (%s)', (dialect) => {
  let db: TestDatabase | undefined;
  beforeAll(async () => {
    if (await dialectAvailable(dialect)) db = await createTestDatabase(dialect);
  });
  afterAll(async () => db?.drop());

  it('the same password keeps tokens across a restart; another one revokes them', { timeout: 30_000 }, async (ctx) => {
    if (!db) return ctx.skip();
    const first = await startTestApp(db.url, NO_MFA);
    const bearer = await tokenOf(first);
    expect(await status(first, bearer)).toBe(200);
    await first.close();

    const same = await startTestApp(db.url, NO_MFA);
    expect(await status(same, bearer)).toBe(200);
    await same.close();

    const changed = await startTestApp(db.url, { ...NO_MFA, MAILSVC_ADMIN_PASSWORD: NEW_PASSWORD });
    try {
      expect(await status(changed, bearer)).toBe(401);
      expect(changed.logs.join('')).toMatch(/administrator password changed since the last start/);
      // The log line names no secret.
      expect(changed.logs.join('')).not.toContain(NEW_PASSWORD);
      const fresh = await tokenOf(changed, NEW_PASSWORD);
      expect(await status(changed, fresh)).toBe(200);
    } finally {
      await changed.close();
    }
  });
});

describe('two instances sharing Redis', () => {
  const url = isolatedRedisUrl(3);
  let db: TestDatabase | undefined;
  let ok = false;
  beforeAll(async () => {
    ok = await redisAvailable();
    if (!ok) return;
    const r = new Redis(url);
    await r.flushdb();
    r.disconnect();
    db = await createTestDatabase('sqlite');
  });
  afterAll(async () => db?.drop());

  it('one instance restarting with a new password revokes the tokens the other one has cached', { timeout: 30_000 }, async (ctx) => {
    if (!ok || !db) return ctx.skip();
    const env = { ...NO_MFA, MAILSVC_REDIS_URL: url };
    const a = await startTestApp(db.url, env);
    const b = await startTestApp(db.url, env);
    try {
      const bearer = await tokenOf(a);
      // B has read the row and caches it.
      expect(await status(b, bearer)).toBe(200);
      await a.close();
      // Each instance has a data dir of its own: no change signal reaches B, only Redis.
      const a2 = await startTestApp(db.url, { ...env, MAILSVC_ADMIN_PASSWORD: NEW_PASSWORD });
      try {
        expect(await status(b, bearer)).toBe(401);
        expect(await status(a2, bearer)).toBe(401);
      } finally {
        await a2.close();
      }
    } finally {
      await b.close();
    }
  });
});

describe('mailsvc admin set-password', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    buildCli();
    db = await createTestDatabase('sqlite');
  });
  afterAll(async () => db.drop());

  it('revokes every token of the running service at once, and those signed in meanwhile at the next start', { timeout: 120_000 }, async () => {
    const t = await startTestApp(db.url, NO_MFA);
    const env = {
      MAILSVC_DATA_DIR: t.dataDir,
      MAILSVC_DATABASE_URL: db.url,
      MAILSVC_SECRET_KEY: t.settings.secretKey ?? '',
    };
    let hashConf = '';
    let meanwhile = '';
    try {
      const bearer = await tokenOf(t);
      expect(await status(t, bearer)).toBe(200);
      const r = await runCli(['admin', 'set-password', '--stdin', '--json'], { env, input: `${NEW_PASSWORD}\n` });
      expectOk(r);
      expect(json(r)).toMatchObject({ ok: true, revoked_tokens: 1 });
      expect(r.stdout + r.stderr).not.toContain(NEW_PASSWORD);
      expect(await eventually(async () => (await status(t, bearer)) === 401)).toBe(true);
      // The running service still has the old password until it restarts.
      meanwhile = await tokenOf(t);
      expect(await status(t, meanwhile)).toBe(200);
      hashConf = readFileSync(join(t.dataDir, 'mailsvc.conf'), 'utf8');
    } finally {
      await t.close();
    }
    const hash = /^MAILSVC_ADMIN_PASSWORD_HASH=(\S+)$/m.exec(hashConf)?.[1] ?? '';
    expect(hash).toMatch(/^\$argon2id\$/);
    const restarted = await startTestApp(db.url, { ...NO_MFA, MAILSVC_ADMIN_PASSWORD_HASH: hash });
    try {
      expect(await status(restarted, meanwhile)).toBe(401);
      expect(await status(restarted, await tokenOf(restarted, NEW_PASSWORD))).toBe(200);
    } finally {
      await restarted.close();
    }
  });
});
