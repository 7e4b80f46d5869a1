/**
 * Issue 34, item 5: one settings file. `mailsvc install --root DIR` on a tree
 * an older release left (mailsvc.env, helper.env, a mailsvc.service with
 * Environment= settings) moves every setting into mailsvc.conf once, the
 * backups' secrets into backup-secrets.conf (root:root 0600), keeps the old
 * files renamed, says so, and renders units that carry no settings; a second
 * run moves nothing. What it moved is what loadSettings then reads.
 */
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildCli, runCli } from '../../../test/helpers/cli.js';
import { loadSettings } from '../../config/settings.js';
import { readSettingsFile } from '../../config/settings-file.js';
import { unitEnvironment } from './settings-migration.js';

/** mailsvc.service's settings lines as releases before this one rendered them. */
const OLD_UNIT = `[Service]
ExecStart=/usr/local/bin/mailsvc serve
User=mailsvc
Environment=MAILSVC_DATA_DIR=/var/lib/mailsvc MAILSVC_MAIL_AUTH_SOCKET=/run/mailsvc/auth-hook.sock NODE_ENV=production
Environment=NODE_OPTIONS=--max-semi-space-size=1
EnvironmentFile=-/etc/mailsvc/mailsvc.env
`;

describe('mailsvc install --root on an older host: the settings move into mailsvc.conf', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-migrate-'));
  const root = join(dir, 'root');
  const etc = join(root, 'etc/mailsvc');
  const units = join(root, 'etc/systemd/system');
  const env = { MAILSVC_DATA_DIR: join(dir, 'data'), MAILSVC_CONFIG_FILE: join(dir, 'data/mailsvc.conf'), MAILSVC_INSTALL_ROOT: '/opt/mailsvc' };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads systemd Environment= assignments, quoted or not', () => {
    expect(unitEnvironment('Environment=A=1 "B=two words" C=\nEnvironment=\'D=x=y\'\nX=1\n')).toEqual({ A: '1', B: 'two words', C: '', D: 'x=y' });
  });

  it('moves mailsvc.env, helper.env and the unit\'s settings once, keeps the old files renamed and says so', async () => {
    buildCli();
    mkdirSync(etc, { recursive: true });
    mkdirSync(units, { recursive: true });
    writeFileSync(join(etc, 'mailsvc.conf'), '# the administrator\'s\nMAILSVC_DATA_DIR=/var/lib/mailsvc\nMAILSVC_API_PORT=8080\n', { mode: 0o640 });
    writeFileSync(
      join(etc, 'mailsvc.env'),
      [
        'MAILSVC_POLICY_LISTEN=unix:/var/spool/postfix/mailsvc/policy',
        'MAILSVC_POLICY_SOCKET_GROUP=0',
        'MAILSVC_MAIL_AUTH_SOCKET_GROUP=0',
        'MAILSVC_API_PORT=8081',
        'MAILSVC_UPDATE_CHECK_URL_STABLE=https://mirror.example.org:8443/stable',
        'NODE_EXTRA_CA_CERTS=/etc/mailsvc/feed-ca.pem',
        'TZ=UTC',
        '',
      ].join('\n'),
      { mode: 0o640 },
    );
    writeFileSync(join(etc, 'helper.env'), 'MAILSVC_POSTFIX_CONFIG_DIR=/srv/postfix\nMAILSVC_API_PORT=9999\nRCLONE_CONFIG_OFFSITE_TYPE=sftp\nRCLONE_CONFIG_OFFSITE_PASS="s3cret pass"\nMAILSVC_BACKUP_ENCRYPTION_KEY=k3y\n', { mode: 0o600 });
    writeFileSync(join(units, 'mailsvc.service'), OLD_UNIT);

    const r = await runCli(['install', '--root', root, '--json'], { env });
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { done: string[]; left: string[] };
    const done = report.done.join('\n');
    // Paths as written: under DIR.
    expect(done).toContain(`moved 8 setting(s) into ${etc}/mailsvc.conf: MAILSVC_MAIL_AUTH_SOCKET, MAILSVC_POLICY_LISTEN,`);
    expect(done).toContain('MAILSVC_API_PORT (was 8080 in the file; the service ran with 8081)');
    expect(done).toContain(`${etc}/mailsvc.env is no longer read`);
    expect(done).toContain(`kept as ${etc}/mailsvc.env.migrated`);
    expect(done).toContain(`kept as ${etc}/helper.env.migrated`);
    expect(done).toContain(`moved the backups' secrets (RCLONE_CONFIG_OFFSITE_TYPE, RCLONE_CONFIG_OFFSITE_PASS, MAILSVC_BACKUP_ENCRYPTION_KEY) into ${etc}/backup-secrets.conf (root:root 0600)`);
    expect(done).not.toContain('s3cret');
    expect(report.left.join('\n')).toMatch(/not moved \(not mailsvc settings\): TZ \(\/etc\/mailsvc\/mailsvc\.env\)/);
    expect(report.left.join('\n')).toMatch(/NODE_EXTRA_CA_CERTS became MAILSVC_UPDATE_CA_FILE/);

    const conf = readSettingsFile(join(etc, 'mailsvc.conf'));
    expect(conf).toMatchObject({
      MAILSVC_DATA_DIR: '/var/lib/mailsvc',
      MAILSVC_MAIL_AUTH_SOCKET: '/run/mailsvc/auth-hook.sock',
      MAILSVC_POLICY_LISTEN: 'unix:/var/spool/postfix/mailsvc/policy',
      MAILSVC_API_PORT: '8081', // mailsvc.env won over the file at run time, and over helper.env
      MAILSVC_POSTFIX_CONFIG_DIR: '/srv/postfix',
      MAILSVC_UPDATE_CA_FILE: '/etc/mailsvc/feed-ca.pem',
    });
    // The comment and the order of what was there are kept; no secret reached the file the service reads.
    const text = readFileSync(join(etc, 'mailsvc.conf'), 'utf8');
    expect(text.startsWith("# the administrator's\nMAILSVC_DATA_DIR=/var/lib/mailsvc\nMAILSVC_API_PORT=8081\n")).toBe(true);
    expect(text).not.toMatch(/RCLONE|s3cret|k3y|TZ=|MAILSVC_HELPER/);
    const secrets = join(etc, 'backup-secrets.conf');
    expect(readSettingsFile(secrets)).toEqual({ RCLONE_CONFIG_OFFSITE_TYPE: 'sftp', RCLONE_CONFIG_OFFSITE_PASS: 's3cret pass', MAILSVC_BACKUP_ENCRYPTION_KEY: 'k3y' });
    const st = lstatSync(secrets);
    expect([st.uid, st.gid, st.mode & 0o777]).toEqual([0, 0, 0o600]);
    expect(existsSync(join(etc, 'mailsvc.env'))).toBe(false);
    expect(existsSync(join(etc, 'helper.env'))).toBe(false);
    expect(lstatSync(join(etc, 'mailsvc.env.migrated')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(etc, 'helper.env.migrated'), 'utf8')).toContain('RCLONE_CONFIG_OFFSITE_PASS');

    // What the service, the CLI as root and the helper now read, from that one file and an empty environment.
    const s = loadSettings({ MAILSVC_CONFIG_FILE: join(etc, 'mailsvc.conf'), MAILSVC_DATA_DIR: join(dir, 'data') });
    expect(s.mail.policyListen).toEqual({ path: '/var/spool/postfix/mailsvc/policy', socketGroup: 0 });
    expect(s.mail.authHookSocket).toBe('/run/mailsvc/auth-hook.sock');
    expect(s.apiPort).toBe(8081);
    expect(s.helper.postfixConfigDir).toBe('/srv/postfix');
    expect(s.updates.caFile).toBe('/etc/mailsvc/feed-ca.pem');
  }, 120_000);

  it('renders units that carry no settings: no Environment=MAILSVC_*, no EnvironmentFile=', () => {
    const names = readdirSync(units);
    expect(names.length).toBeGreaterThan(10);
    for (const n of names) {
      const text = readFileSync(join(units, n), 'utf8');
      expect(text, n).not.toMatch(/^Environment=.*MAILSVC_/m);
      expect(text, n).not.toMatch(/^EnvironmentFile=/m);
      expect(text, n).not.toMatch(/^Environment=.*NODE_ENV/m);
      // Only the service keeps a runtime flag of V8 (not a setting: it must be given before Node starts).
      for (const line of text.split('\n').filter((l) => l.startsWith('Environment='))) expect(`${n}: ${line}`).toBe('mailsvc.service: Environment=NODE_OPTIONS=--max-semi-space-size=1');
    }
  });

  it('a second run moves nothing and changes nothing', async () => {
    const before = readFileSync(join(etc, 'mailsvc.conf'), 'utf8');
    const secrets = readFileSync(join(etc, 'backup-secrets.conf'), 'utf8');
    const r = await runCli(['install', '--root', root, '--json'], { env });
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as { done: string[]; left: string[] };
    expect(report.done.join('\n')).not.toMatch(/moved|no longer read|migrated/);
    expect(report.left.join('\n')).not.toMatch(/not moved|NODE_EXTRA_CA_CERTS/);
    expect(readFileSync(join(etc, 'mailsvc.conf'), 'utf8')).toBe(before);
    expect(readFileSync(join(etc, 'backup-secrets.conf'), 'utf8')).toBe(secrets);
    expect(readdirSync(etc).filter((n) => n.includes('migrated')).sort()).toEqual(['helper.env.migrated', 'mailsvc.env.migrated']);
  }, 120_000);

  it('a drop-in that still sets MAILSVC_* is named, and left as it is', async () => {
    mkdirSync(join(units, 'mailsvc.service.d'), { recursive: true });
    writeFileSync(join(units, 'mailsvc.service.d/override.conf'), '[Service]\nEnvironment=MAILSVC_LOG_LEVEL=debug\n');
    const r = await runCli(['install', '--root', root, '--json'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { left: string[] }).left.join('\n')).toContain('a drop-in still sets MAILSVC_* or an EnvironmentFile=: /etc/systemd/system/mailsvc.service.d/override.conf');
    expect(readFileSync(join(units, 'mailsvc.service.d/override.conf'), 'utf8')).toContain('MAILSVC_LOG_LEVEL=debug');
  }, 120_000);
});
