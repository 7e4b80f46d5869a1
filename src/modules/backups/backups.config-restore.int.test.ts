import { describe, expect, it } from 'vitest';
import { chmodSync, chownSync, cpSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import { expectOk, json, runCli } from '../../../test/helpers/cli.js';
import { backupEnv, makeMailStorage, seedRows, tableRows, treeSnapshot } from '../../../test/helpers/backups.js';
import type { BackupEnv } from '../../../test/helpers/backups.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { loadSettings } from '../../config/settings.js';
import { createDb } from '../../db/database.js';
import { loadSecretBox } from '../../shared/secret-key-file.js';
import { BackupSecrets } from './backup-secrets.repository.js';

const hasPostfix = existsSync('/usr/sbin/postfix') && existsSync('/etc/postfix/master.cf');
const GOOD_MAIN = 'compatibility_level = 3.6\nmyhostname = mail.example.com\n';

const SOCKET_SETTINGS = 'MAILSVC_POLICY_LISTEN=unix:/var/spool/postfix/mailsvc/policy\nMAILSVC_POLICY_SOCKET_GROUP=0\nMAILSVC_MAIL_AUTH_SOCKET=/run/mailsvc/auth-hook.sock\nMAILSVC_MAIL_AUTH_SOCKET_GROUP=0\n';

type Layout = BackupEnv & { conf: string; postfix: string; dkim: string; settingsFile: string; keyFile: string; dbFile: string };

/**
 * A host laid out as on a real one, all under a temp dir: data dir with the
 * SQLite database and the key file (no MAILSVC_SECRET_KEY), a settings file
 * in its own directory, a Postfix configuration (Debian's master.cf, our
 * main.cf) and a DKIM key owned by another user.
 */
async function host(): Promise<Layout> {
  const db = await createTestDatabase('sqlite');
  const base = backupEnv(db.url);
  const dbFile = join(base.data, 'mailsvc.db');
  const conf = join(base.dir, 'etc-mailsvc');
  const postfix = join(base.dir, 'etc-postfix-live');
  // Rspamd's DKIM keys beside its local.d: a daemon directory of the restore allow-list.
  const dkim = join(base.dir, 'rspamd', 'dkim');
  const settingsFile = join(conf, 'mailsvc.conf');
  mkdirSync(conf, { mode: 0o750 });
  // The one settings file, with the socket settings older releases kept in mailsvc.env (which no backup held).
  writeFileSync(settingsFile, `MAILSVC_BACKUP_COMPRESSION=gzip\n${SOCKET_SETTINGS}`, { mode: 0o640 });
  // Root's backup secrets beside it: never archived (the archive is readable by the service's group).
  writeFileSync(join(conf, 'backup-secrets.conf'), 'RCLONE_CONFIG_OFFSITE_TYPE=sftp\nRCLONE_CONFIG_OFFSITE_PASS=not-in-any-backup\n', { mode: 0o600 });
  // Without Debian's links into /usr/share/postfix (makedefs.out): a restore on a fresh host writes no link leading out of its directory.
  cpSync('/etc/postfix', postfix, { recursive: true, filter: (s) => !s.endsWith('/sasl') && !lstatSync(s).isSymbolicLink() });
  writeFileSync(join(postfix, 'main.cf'), GOOD_MAIN);
  chmodSync(join(postfix, 'main.cf'), 0o640);
  mkdirSync(dkim, { recursive: true, mode: 0o750 });
  writeFileSync(join(dkim, 'example.com.key'), `-----BEGIN PRIVATE KEY-----\n${randomBytes(48).toString('base64')}\n-----END PRIVATE KEY-----\n`, { mode: 0o600 });
  // Root's, with the daemon's group (MAILSVC_RSPAMD_GROUP): what a restore may give a file.
  chownSync(join(dkim, 'example.com.key'), 0, 104);
  const keyFile = join(base.data, 'secret.key');
  writeFileSync(keyFile, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  const env: Record<string, string> = { ...base.env, MAILSVC_DATABASE_URL: `sqlite://${dbFile}`, MAILSVC_CONFIG_FILE: settingsFile, MAILSVC_POSTFIX_CONFIG_DIR: postfix, MAILSVC_RSPAMD_LOCAL_DIR: join(base.dir, 'rspamd', 'local.d'), MAILSVC_RSPAMD_GROUP: '104', MAILSVC_BACKUP_CONFIG_PATHS: `${postfix} ${dkim}` };
  delete env.MAILSVC_SECRET_KEY;
  await db.drop();
  return { ...base, env, conf, postfix, dkim, settingsFile, keyFile, dbFile, cli: (args, timeoutMs = 120_000) => runCli(args, { env, timeoutMs }) };
}

const stat = (p: string): string => {
  const s = statSync(p);
  return `${(s.mode & 0o7777).toString(8)} ${s.uid}:${s.gid}`;
};

describe('restore --restore-config: a fresh host from the backup alone', () => {
  it('refuses a database whose secrets need the backup key unless the config comes back; then puts every file back with its mode and owner, and the service opens the restored sealed secret', async () => {
    if (!hasPostfix) return skipNotice('postfix (Debian package)', 'not installed');
    const t = await host();
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 2, 5);
      await seedRows(`sqlite://${t.dbFile}`, 'c');
      // A sealed secret in the database: the remote encryption key, sealed with the key file.
      const settings = { dataDir: t.data, secretKey: undefined, secretKeyPrevious: [] };
      const db = createDb(`sqlite://${t.dbFile}`);
      const sealed = await new BackupSecrets(db, () => loadSecretBox(settings, { create: false })).encryptionKey();
      await db.destroy();
      const files = [t.settingsFile, t.keyFile, join(t.postfix, 'main.cf'), join(t.postfix, 'master.cf'), join(t.dkim, 'example.com.key')];
      const before = Object.fromEntries(files.map((f) => [f, `${stat(f)} ${readFileSync(f, 'base64')}`]));
      // A directory of CONFIG_PATHS keeps its mode and owner (the settings file's directory is not archived itself).
      const dirs = Object.fromEntries([t.dkim].map((d) => [d, stat(d)]));
      const tree = treeSnapshot(t.mail);
      const rows = await tableRows(`sqlite://${t.dbFile}`, 'sqlite', ['audit_log', 'jobs']);
      const b = json(await t.cli(['backup', 'run', '--json', '--full']));

      // The administrator saved the manifest key off the host (backup show says so).
      const savedKey = join(t.dir, 'saved-manifest.key');
      cpSync(join(t.data, 'backup-manifest.key'), savedKey);
      // The fresh host: no data directory (database, key file, manifest key), no settings, no Postfix or DKIM files, no mail.
      for (const d of [t.data, t.conf, t.postfix, t.dkim, t.mail]) rmSync(d, { recursive: true, force: true });
      mkdirSync(t.data);

      const refused = await t.cli(['restore', '--source', String(b.path), '--manifest-key', savedKey]);
      expect(refused.code).toBe(78);
      expect(refused.stderr).toMatch(/refusing to restore, nothing was changed: the database of .* holds secrets sealed with key [0-9a-f]{8}, and this host's key is missing; add --restore-config/);
      expect([t.mail, t.settingsFile, t.postfix, t.keyFile].map(existsSync)).toEqual([false, false, false, false]);
      // The CLI's database connection may leave an empty SQLite file (its header); no table was written into it.
      if (existsSync(t.dbFile)) expect(Object.keys(await tableRows(`sqlite://${t.dbFile}`, 'sqlite'))).toEqual([]);

      // MAILSVC_SECRET_KEY would win over the restored key file: refused too, nothing changed.
      const envKey = await runCli(['restore', '--source', String(b.path), '--restore-config', '--manifest-key', savedKey], { env: { ...t.env, MAILSVC_SECRET_KEY: randomBytes(32).toString('base64') }, timeoutMs: 120_000 });
      expect(envKey.code).toBe(78);
      expect(envKey.stderr).toContain('MAILSVC_SECRET_KEY (key ');
      expect([t.mail, t.settingsFile, t.postfix, t.keyFile].map(existsSync)).toEqual([false, false, false, false]);

      const r = await t.cli(['restore', '--source', String(b.path), '--restore-config', '--manifest-key', savedKey, '--json']);
      expectOk(r);
      expect(json(r)).toMatchObject({ restored_files: true, restored_db: true, restored_config: true });
      expect(JSON.stringify(json(r).steps)).toMatch(/checked: postfix/);
      expect(Object.fromEntries(files.map((f) => [f, `${stat(f)} ${readFileSync(f, 'base64')}`]))).toEqual(before);
      // The settings come back: what the service and the CLI as root read from that file after the restore.
      const restored = loadSettings({ ...t.env, MAILSVC_CONFIG_FILE: t.settingsFile });
      expect(restored.mail.policyListen).toEqual({ path: '/var/spool/postfix/mailsvc/policy', socketGroup: 0 });
      expect(restored.mail.authHookSocket).toBe('/run/mailsvc/auth-hook.sock');
      // Root's backup secrets were in no backup: the administrator keeps them off the host (docs/backups.md).
      expect(existsSync(join(t.conf, 'backup-secrets.conf'))).toBe(false);
      expect(execFileSync('tar', ['-tf', join(String(b.path), 'config.tar')], { encoding: 'utf8' })).not.toContain('backup-secrets.conf');
      expect(Object.fromEntries([t.dkim].map((d) => [d, stat(d)]))).toEqual(dirs);
      expect(treeSnapshot(t.mail)).toEqual(tree);
      expect(await tableRows(`sqlite://${t.dbFile}`, 'sqlite', ['audit_log', 'jobs'])).toEqual(rows);

      // The service starts on the restored files and opens the sealed secret restored with the database.
      expectOk(await t.cli(['backup', 'show', '--json']));
      const key = await t.cli(['backup', 'encryption-key']);
      expectOk(key);
      expect(key.stdout.split('\n')[0]).toBe(sealed.key);
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
    }
  }, 240_000);

  it('a daemon file its checker refuses (postfix check) changes nothing: the live configuration, mail and database stay as they were', async () => {
    if (!hasPostfix) return skipNotice('postfix (Debian package)', 'not installed');
    const t = await host();
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 1, 3);
      writeFileSync(join(t.postfix, 'main.cf'), `${GOOD_MAIN}message_size_limit = notanumber\n`);
      const b = json(await t.cli(['backup', 'run', '--json', '--full']));
      // The host moved on: a good main.cf, new settings, new mail and rows.
      writeFileSync(join(t.postfix, 'main.cf'), GOOD_MAIN);
      writeFileSync(t.settingsFile, 'MAILSVC_BACKUP_COMPRESSION=zstd\n');
      makeMailStorage(join(t.mail, 'later'), 1, 2);
      await seedRows(`sqlite://${t.dbFile}`, 'later');
      const live = [join(t.postfix, 'main.cf'), t.settingsFile].map((f) => readFileSync(f, 'utf8'));
      const tree = treeSnapshot(t.mail);
      const rows = await tableRows(`sqlite://${t.dbFile}`, 'sqlite', ['audit_log', 'jobs']);

      const r = await t.cli(['restore', '--source', String(b.path), '--restore-config']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/refusing to restore, the configuration was not changed: check of postfix failed: postfix check refused the new configuration: postfix exited 1.*Every file is as it was before/);
      expect([join(t.postfix, 'main.cf'), t.settingsFile].map((f) => readFileSync(f, 'utf8'))).toEqual(live);
      expect(treeSnapshot(t.mail)).toEqual(tree);
      expect(await tableRows(`sqlite://${t.dbFile}`, 'sqlite', ['audit_log', 'jobs'])).toEqual(rows);
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
    }
  }, 240_000);
});
