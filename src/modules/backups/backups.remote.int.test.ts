import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import { expectOk, json, runCli } from '../../../test/helpers/cli.js';
import { backupEnv, makeMailStorage, seedRows, tableRows, treeSnapshot } from '../../../test/helpers/backups.js';
import type { BackupEnv } from '../../../test/helpers/backups.js';
import { rcloneUnavailable, startRcloneServer } from '../../../test/helpers/rclone-serve.js';
import { skipNotice } from '../../../test/helpers/services.js';

const noRclone = rcloneUnavailable();
if (noRclone) skipNotice('rclone (serve sftp and webdav)', noRclone);

describe.skipIf(noRclone !== null)('backups to remotes (rclone serve sftp and webdav on 127.0.0.1)', () => {
  it('uploads encrypted and checked to both; a fresh host fetches with the key alone and restores byte-identical', async () => {
    const sftp = await startRcloneServer('sftp');
    const dav = await startRcloneServer('webdav');
    const db = await createTestDatabase('sqlite');
    const fresh = await createTestDatabase('sqlite');
    const remoteEnv = {
      RCLONE_CONFIG_OFFSITE_TYPE: 'sftp',
      RCLONE_CONFIG_OFFSITE_HOST: '127.0.0.1',
      RCLONE_CONFIG_OFFSITE_PORT: String(sftp.port),
      RCLONE_CONFIG_OFFSITE_USER: sftp.user,
      RCLONE_CONFIG_DAV_TYPE: 'webdav',
      RCLONE_CONFIG_DAV_URL: `http://127.0.0.1:${dav.port}`,
      RCLONE_CONFIG_DAV_VENDOR: 'other',
      RCLONE_CONFIG_DAV_USER: dav.user,
      RCLONE_CONFIG_DAV_PASS: dav.obscured,
    };
    const extra: string[] = [];
    const track = (e: BackupEnv): BackupEnv => (extra.push(e.dir), e);
    const t = backupEnv(db.url, { MAILSVC_BACKUP_STORAGE_TYPE: 'remote', MAILSVC_BACKUP_REMOTE_TARGETS: 'offsite:mail-backups dav:mail-backups', ...remoteEnv });
    try {
      expectOk(await t.cli(['db', 'migrate']));
      // The SFTP password is stored sealed (read from stdin), not in the environment.
      const cred = await runCli(['backup', 'remote-credential', 'offsite', 'pass'], { env: t.env, input: `${sftp.password}\n` });
      expectOk(cred);
      makeMailStorage(t.mail, 2, 10);
      await seedRows(db.url, 'r');
      const full = await t.cli(['backup', 'run', '--json'], 180_000);
      expectOk(full);
      const f = json(full);
      expect(f.remote).toEqual(['offsite:mail-backups', 'dav:mail-backups']);
      expect(full.stderr).toContain('mailsvc backup encryption-key');
      const inc = json(await t.cli(['backup', 'run', '--json'], 180_000));
      expect(inc).toMatchObject({ type: 'incremental', remote: ['offsite:mail-backups', 'dav:mail-backups'] });
      const tree = treeSnapshot(t.mail);
      const before = await tableRows(db.url, 'sqlite', ['audit_log', 'jobs']);

      // What the remotes hold is encrypted: rclone's crypt header, never gzip or a readable manifest.
      for (const root of [sftp.root, dav.root]) {
        const dir = join(root, 'mail-backups', String(f.id));
        const names = readdirSync(dir);
        expect(names.every((n) => n.endsWith('.bin'))).toBe(true);
        const archive = readFileSync(join(dir, names.find((n) => n.startsWith('mail.tar')) ?? ''));
        expect(archive.subarray(0, 8).toString('latin1')).toBe('RCLONE\0\0');
        expect(readFileSync(join(dir, 'manifest.json.bin')).toString('latin1')).not.toContain('"artifacts"');
      }

      // The key is shown once, then refused.
      const key = await t.cli(['backup', 'encryption-key']);
      expectOk(key);
      const secret = key.stdout.split('\n')[0] ?? '';
      expect(Buffer.from(secret, 'base64')).toHaveLength(32);
      expect((await t.cli(['backup', 'encryption-key'])).code).toBe(3);
      // Never in the database in clear, nor in a job result or the audit log.
      const rows = JSON.stringify(await tableRows(db.url, 'sqlite'));
      expect(rows).not.toContain(secret);
      expect(rows).not.toContain(sftp.password);

      // A fresh host: another data directory, an empty database, no local backups; the remote's settings, the
      // remote key, the secret key the backup host took from MAILSVC_SECRET_KEY (no backup holds that one), and the
      // manifest key the administrator saved beside the remote key (--manifest-key).
      const h = track(backupEnv(fresh.url, { ...remoteEnv, MAILSVC_SECRET_KEY: t.env.MAILSVC_SECRET_KEY ?? '', RCLONE_CONFIG_OFFSITE_PASS: sftp.obscured, MAILSVC_BACKUP_ENCRYPTION_KEY: secret, MAILSVC_MAIL_STORAGE: join(t.dir, 'restored-vmail') }));
      const fetched = await h.cli(['backup', 'fetch', 'offsite:mail-backups', String(inc.id), '--json'], 180_000);
      expectOk(fetched);
      expect(JSON.parse(fetched.stdout)).toEqual([f.id, inc.id]);
      const r = await h.cli(['restore', '--source', join(h.local, String(inc.id)), '--manifest-key', join(t.data, 'backup-manifest.key'), '--json'], 180_000);
      expectOk(r);
      expect(treeSnapshot(join(t.dir, 'restored-vmail'))).toEqual(tree);
      expect(await tableRows(fresh.url, 'sqlite', ['audit_log', 'jobs'])).toEqual(before);

      // With a wrong key, nothing readable comes back.
      const w = track(backupEnv(fresh.url, { ...remoteEnv, RCLONE_CONFIG_OFFSITE_PASS: sftp.obscured, MAILSVC_BACKUP_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') }));
      const bad = await w.cli(['backup', 'fetch', 'offsite:mail-backups', String(inc.id)], 180_000);
      expect(bad.code).not.toBe(0);
      expect(existsSync(join(w.local, String(inc.id), 'manifest.json'))).toBe(false);
    } finally {
      for (const d of [t.dir, ...extra]) rmSync(d, { recursive: true, force: true });
      await db.drop();
      await fresh.drop();
      await sftp.stop();
      await dav.stop();
    }
  }, 600_000);
});
