import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings, SettingsError } from './settings.js';
import { INSTALLED_CONFIG_FILE, INSTALLED_DATA_DIR, detectLayout, packageRoot } from './layout.js';

describe('settings', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-settings-'));

  it('has the documented defaults', () => {
    const s = loadSettings({ MAILSVC_DATA_DIR: dir });
    expect(s).toMatchObject({
      apiHost: '127.0.0.1', apiPort: 8080, databaseUrl: `sqlite://${join(dir, 'mailsvc.db')}`, redisUrl: undefined,
      adminUsername: 'admin', mfaRequired: true, mfaAllowBasicWithoutToken: false, mfaIssuer: 'mailsvc',
      accessTokenTtl: 3600, mfaChallengeTtl: 300, apiAuthFailLimit: 5, apiAuthFailWindow: 600, apiAuthBlockSeconds: 900,
      trustedProxies: [], outboundAllowHosts: [], enableWebPanel: false, enableUserPortal: false, authLog: join(dir, 'auth.log'),
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

  it('each limit key foo-bar takes its default from MAILSVC_FOO_BAR, in the file or the environment', () => {
    writeFileSync(join(dir, 'mailsvc.conf'), 'MAILSVC_MESSAGE_SIZE_LIMIT=20M\nMAILSVC_GREYLIST_DELAY=1m\n');
    const s = loadSettings({ MAILSVC_DATA_DIR: dir, MAILSVC_GREYLIST_DELAY: '2m' });
    expect(s.limitDefaults['message-size-limit']).toBe(20_971_520);
    expect(s.limitDefaults['greylist-delay']).toBe(120);
    expect(s.limitDefaults['smtp-recipient-limit']).toBe(1000);
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
    ['MAILSVC_MESSAGE_SIZE_LIMIT', '50X'],
    ['MAILSVC_FAIL2BAN_SSHD_BANTIME', 'forever'],
    ['MAILSVC_RSPAMD_LOCAL_DIR', 'relative/local.d'],
    ['MAILSVC_LOG_LEVEL', 'verbose'],
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

describe('where the data lives', () => {
  const env = (extra: Record<string, string> = {}): Record<string, string> => ({ ...extra });

  it('a checkout keeps var/ of the checkout, whatever the current directory', () => {
    const root = mkdtempSync(join(tmpdir(), 'mailsvc-checkout-'));
    const layout = detectLayout(root);
    mkdirSync(join(root, 'src'));
    writeFileSync(join(root, 'src', 'main.ts'), '');
    const checkout = detectLayout(root);
    expect(layout.kind).toBe('installed');
    expect(checkout).toMatchObject({ kind: 'checkout', dataDir: join(root, 'var') });
    for (const cwd of ['/', tmpdir(), root]) {
      const s = loadSettings(env(), cwd, checkout);
      expect(s.dataDir).toBe(join(root, 'var'));
      expect(s.configFile).toBe(join(root, 'var', 'mailsvc.conf'));
      expect(s.databaseUrl).toBe(`sqlite://${join(root, 'var', 'mailsvc.db')}`);
    }
  });

  it('an installed release uses /var/lib/mailsvc and /etc/mailsvc/mailsvc.conf from any directory', () => {
    const root = mkdtempSync(join(tmpdir(), 'mailsvc-release-'));
    const layout = detectLayout(root);
    expect(layout).toMatchObject({ kind: 'installed', dataDir: INSTALLED_DATA_DIR, configFile: INSTALLED_CONFIG_FILE });
    for (const cwd of ['/', '/root', root]) {
      const s = loadSettings(env(), cwd, layout);
      expect(s.dataDir).toBe('/var/lib/mailsvc');
      expect(s.configFile).toBe('/etc/mailsvc/mailsvc.conf');
      expect(s.authLog).toBe('/var/lib/mailsvc/auth.log');
    }
  });

  it('the settings file may move the data directory; the environment wins over it', () => {
    const root = mkdtempSync(join(tmpdir(), 'mailsvc-release-'));
    const conf = join(root, 'mailsvc.conf');
    writeFileSync(conf, `MAILSVC_DATA_DIR=${join(root, 'data')}\n`);
    const layout = { ...detectLayout(root), configFile: conf };
    expect(loadSettings(env(), '/', layout).dataDir).toBe(join(root, 'data'));
    expect(loadSettings(env({ MAILSVC_DATA_DIR: join(root, 'other') }), '/', layout).dataDir).toBe(join(root, 'other'));
  });

  it('this repository is a checkout: the default data directory is its var/', () => {
    const s = loadSettings({}, '/');
    expect(s.layout).toBe('checkout');
    expect(s.dataDir).toBe(join(packageRoot(), 'var'));
  });
});
