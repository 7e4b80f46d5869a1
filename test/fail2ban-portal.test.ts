import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { skipNotice } from './helpers/services.js';
import { signInRequest } from './helpers/portal.js';

/**
 * The portal's fail2ban filter (deploy/fail2ban/filter.d/mailsvc-portal.conf),
 * run by the real fail2ban-regex over the auth log the real service writes:
 * it takes the portal's lines and only those, and never a forged address.
 */
const root = fileURLToPath(new URL('../', import.meta.url));
const filter = (name: string) => join(root, `deploy/fail2ban/filter.d/${name}.conf`);
const FORGED = '198.51.100.9';

let haveRegex = true;
try {
  execFileSync('fail2ban-regex', ['--version'], { stdio: 'ignore', timeout: 30_000 });
} catch {
  haveRegex = false;
  skipNotice('fail2ban-regex (Debian package fail2ban)', 'not found on PATH');
}

const hosts = (log: string, name: string): string[] =>
  execFileSync('fail2ban-regex', ['-o', '<ip>', log, filter(name)], { encoding: 'utf8', timeout: 30_000 }).split('\n').map((l) => l.trim()).filter(Boolean);

describe.skipIf(!haveRegex)('fail2ban reads the portal\'s sign-in failures', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_ENABLE_USER_PORTAL: 'yes', MAILSVC_MFA_REQUIRED: 'no' });
    await t.ctx.domains.create('example.org');
    await t.ctx.accounts.create({ address: 'alice@example.org', password: 'alice-mailbox-pw' });
    expect((await signInRequest(t.app, { address: 'alice@example.org', password: 'wrong-password' }, '203.0.113.7')).statusCode).toBe(401);
    expect((await signInRequest(t.app, { address: `x from ${FORGED}`, password: 'whatever' }, '203.0.113.9')).statusCode).toBe(401);
    expect((await signInRequest(t.app, { address: 'alice@example.org', password: 'alice-mailbox-pw' }, '203.0.113.8')).statusCode).toBe(200);
    // One failure of the admin API, in the same file.
    expect((await t.app.inject({ method: 'POST', url: '/auth/login', remoteAddress: '192.0.2.1', payload: { username: 'admin', password: 'nope' } })).statusCode).toBe(401);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('the portal filter bans the portal\'s failing clients, never the forged address nor the admin API\'s; the admin filter does not take the portal\'s lines', () => {
    expect(readFileSync(t.settings.authLog, 'utf8')).toMatch(/mailsvc-portal: authentication failure for x_from_198\.51\.100\.9 from 203\.0\.113\.9\n/);
    expect(hosts(t.settings.authLog, 'mailsvc-portal')).toEqual(['203.0.113.7', '203.0.113.9']);
    expect(hosts(t.settings.authLog, 'mailsvc-auth')).toEqual(['192.0.2.1']);
  });
});
