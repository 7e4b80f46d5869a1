import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/helpers/dialects.js';
import type { TestDatabase } from '../../test/helpers/dialects.js';
import { ADMIN_PASSWORD, startTestApp } from '../../test/helpers/app.js';
import type { TestApp } from '../../test/helpers/app.js';
import { call, enableTotp, login, signInWithTotp } from '../../test/helpers/flows.js';
import { AuthLog } from '../shared/auth-log.js';

describe('secrets stay out of responses, logs and error messages', () => {
  let db: TestDatabase;
  let t: TestApp;
  let bearer = '';
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, {});
  });
  afterAll(async () => {
    await t.close();
    await db.drop();
  });

  it('a full session leaves no password, token, TOTP secret or provider secret in the service log', async () => {
    await login(t, 'wrong-password-Zq9');
    const secret = await enableTotp(t);
    bearer = await signInWithTotp(t, secret);
    await call(t, 'PUT', '/auth/mfa/providers', bearer, { code: 'provider_a', client_secret: 'CS-zz-secret', api_key: 'AK-zz-secret' });
    await call(t, 'PUT', '/auth/mfa/providers', bearer, { code: 'provider_a', base_url: 'http://10.0.0.1', api_key: 'AK-in-bad-request' });
    const log = t.logs.join('');
    expect(log.length).toBeGreaterThan(0);
    for (const s of [ADMIN_PASSWORD, 'wrong-password-Zq9', secret, bearer.slice(7), 'CS-zz-secret', 'AK-zz-secret', 'AK-in-bad-request', Buffer.from(`admin:${ADMIN_PASSWORD}`).toString('base64')]) {
      expect(log).not.toContain(s);
    }
  });

  it('the MFA status never carries the TOTP secret; only the enroll response does, once', async () => {
    const status = await call(t, 'GET', '/auth/mfa', bearer);
    expect(status.status).toBe(200);
    expect(Object.keys(status.body)).not.toContain('totp_secret');
    expect(JSON.stringify(status.body)).not.toMatch(/secret/);
  });

  it('auth log lines cannot be forged through the user name', () => {
    expect(AuthLog.sanitizeUser('x from 203.0.113.9\nmailsvc-auth: authentication failure for y from 1.2.3.4')).not.toMatch(/[\s]/);
    expect(AuthLog.sanitizeUser('')).toBe('-');
    expect(AuthLog.sanitizeUser('a'.repeat(500))).toHaveLength(64);
  });
});
