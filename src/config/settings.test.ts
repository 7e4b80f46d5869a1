import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings, SettingsError } from './settings.js';

describe('settings (decisions.md §1)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-settings-'));

  it('has the documented defaults', () => {
    const s = loadSettings({ MAILSVC_DATA_DIR: dir });
    expect(s).toMatchObject({
      apiHost: '127.0.0.1', apiPort: 8080, databaseUrl: `sqlite://${join(dir, 'mailsvc.db')}`, redisUrl: undefined,
      adminUsername: 'admin', mfaRequired: true, mfaAllowBasicWithoutToken: false, mfaIssuer: 'mailsvc',
      accessTokenTtl: 3600, mfaChallengeTtl: 300, apiAuthFailLimit: 5, apiAuthFailWindow: 600, apiAuthBlockSeconds: 900,
      trustedProxies: [], outboundAllowHosts: [], enableWebPanel: false, authLog: join(dir, 'auth.log'),
    });
  });

  it('reads the settings file; the environment wins over it', () => {
    const file = join(dir, 'mailsvc.conf');
    writeFileSync(file, '# comment\nMAILSVC_API_PORT=9090\nMAILSVC_MFA_ISSUER="Mail Host"\nMAILSVC_API_AUTH_FAIL_LIMIT=7\n');
    const s = loadSettings({ MAILSVC_DATA_DIR: dir, MAILSVC_API_AUTH_FAIL_LIMIT: '9' });
    expect(s.apiPort).toBe(9090);
    expect(s.mfaIssuer).toBe('Mail Host');
    expect(s.apiAuthFailLimit).toBe(9);
  });

  it.each([
    ['MAILSVC_API_PORT', 'abc'],
    ['MAILSVC_API_PORT', '70000'],
    ['MAILSVC_MFA_REQUIRED', 'maybe'],
    ['MAILSVC_DATABASE_URL', 'oracle://x'],
    ['MAILSVC_REDIS_URL', 'http://x'],
    ['MAILSVC_SECRET_KEY', 'short'],
    ['MAILSVC_ADMIN_PASSWORD_HASH', '$2b$10$bcrypt'],
    ['MAILSVC_SMS_DEFAULT_REGION', 'germany'],
    ['MAILSVC_API_AUTH_FAIL_LIMIT', '0'],
    ['MAILSVC_TRUSTED_PROXIES', '10.0.0.0/99'],
  ])('an invalid %s stops the start with an error naming the key', (key, value) => {
    const fresh = mkdtempSync(join(tmpdir(), 'mailsvc-settings-'));
    let error: unknown;
    try {
      loadSettings({ MAILSVC_DATA_DIR: fresh, [key]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(SettingsError);
    expect((error as Error).message).toContain(key);
  });
});
