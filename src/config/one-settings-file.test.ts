/**
 * Issue 34, item 5: every process reads its settings from the one settings
 * file. The helper's settings (paths and programs root uses) too, but only
 * when no one but root can change the file; an installed host's hook socket
 * is where Dovecot looks without any unit saying so.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { backupSecretsEnv } from './backup-secrets-file.js';
import { loadHelperProcessSettings, loadSettings } from './settings.js';
import { onlyRootWrites, trustedFileValues } from './trusted-file.js';

const asRoot = process.getuid?.() === 0;

describe('one settings file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-conf-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('an installed host: the data in /var/lib/mailsvc and the hook socket in /run/mailsvc, with no unit saying so', () => {
    const s = loadSettings({ MAILSVC_CONFIG_FILE: join(dir, 'none.conf') }, dir, { kind: 'installed', root: '/opt/mailsvc/releases/1.0.0', dataDir: '/var/lib/mailsvc', configFile: '/etc/mailsvc/mailsvc.conf' });
    expect(s.dataDir).toBe('/var/lib/mailsvc');
    expect(s.mail.authHookSocket).toBe('/run/mailsvc/auth-hook.sock');
    // A checkout keeps it in its data directory.
    expect(loadSettings({ MAILSVC_DATA_DIR: dir }).mail.authHookSocket).toBe(join(dir, 'auth-hook.sock'));
  });

  it.skipIf(!asRoot)('root takes the helper\'s settings from a file only root can change, never from one the service user could', () => {
    const etc = join(dir, 'etc');
    mkdirSync(etc, { mode: 0o750 });
    const conf = join(etc, 'mailsvc.conf');
    writeFileSync(conf, 'MAILSVC_POSTFIX_CONFIG_DIR=/srv/postfix\nMAILSVC_LOG_LEVEL=debug\n', { mode: 0o640 });
    const env = { MAILSVC_CONFIG_FILE: conf, MAILSVC_DATA_DIR: dir };
    expect(onlyRootWrites(conf)).toBe(true);
    expect(loadSettings(env).helper.postfixConfigDir).toBe('/srv/postfix');
    expect(loadHelperProcessSettings(env)).toMatchObject({ helper: { postfixConfigDir: '/srv/postfix' }, logLevel: 'debug' });
    // The environment still wins.
    expect(loadHelperProcessSettings({ ...env, MAILSVC_POSTFIX_CONFIG_DIR: '/etc/postfix' }).helper.postfixConfigDir).toBe('/etc/postfix');

    // Another user owns the file, or may write it, or may write the directory it is in: root ignores its helper settings.
    for (const [what, change, undo] of [
      ['owned by another user', () => chownSync(conf, 65534, 0), () => chownSync(conf, 0, 0)],
      ['group-writable', () => chmodSync(conf, 0o660), () => chmodSync(conf, 0o640)],
      ['in a directory another user owns', () => chownSync(etc, 65534, 0), () => chownSync(etc, 0, 0)],
      ['in a group-writable directory', () => chmodSync(etc, 0o770), () => chmodSync(etc, 0o750)],
    ] as const) {
      change();
      try {
        expect(onlyRootWrites(conf), what).toBe(false);
        expect(loadSettings(env).helper.postfixConfigDir, what).toBe('/etc/postfix');
        expect(loadHelperProcessSettings(env).helper.postfixConfigDir, what).toBe('/etc/postfix');
        // Settings that are not root's to act on are still read (the service reads the same file).
        expect(loadSettings(env).logLevel, what).toBe('debug');
      } finally {
        undo();
      }
    }
    // A process that is not root takes every value: it has no more rights than the file's writer.
    expect(trustedFileValues(conf, { A: '1' }, 1000)).toEqual({ A: '1' });
  });

  it.skipIf(!asRoot)('root\'s backup secrets: the remotes and the encryption key from root\'s 0600 file only, the environment winning', () => {
    const file = join(dir, 'backup-secrets.conf');
    writeFileSync(file, 'RCLONE_CONFIG_OFFSITE_TYPE=sftp\nRCLONE_CONFIG_OFFSITE_PASS=x\nMAILSVC_BACKUP_ENCRYPTION_KEY=k\nMAILSVC_BACKUP_LOCAL_DIR=/tmp/elsewhere\n', { mode: 0o600 });
    const env = backupSecretsEnv(file, { RCLONE_CONFIG_OFFSITE_PASS: 'from-env' }, 0);
    expect(env).toEqual({ RCLONE_CONFIG_OFFSITE_TYPE: 'sftp', RCLONE_CONFIG_OFFSITE_PASS: 'from-env', MAILSVC_BACKUP_ENCRYPTION_KEY: 'k' });
    // Not root, or a file another user could change: the environment alone.
    expect(backupSecretsEnv(file, {}, 1000)).toEqual({});
    chownSync(file, 65534, 0);
    try {
      expect(backupSecretsEnv(file, {}, 0)).toEqual({});
    } finally {
      chownSync(file, 0, 0);
    }
    // Its default place: beside the settings file.
    expect(loadSettings({ MAILSVC_DATA_DIR: dir, MAILSVC_CONFIG_FILE: join(dir, 'etc/mailsvc.conf') }).backup.secretsFile).toBe(join(dir, 'etc/backup-secrets.conf'));
  });
});
