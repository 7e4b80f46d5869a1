import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import { expectOk, json, runCli } from '../../../test/helpers/cli.js';
import { backupEnv, makeMailStorage, writeMessage } from '../../../test/helpers/backups.js';
import { rcloneUnavailable, startRcloneServer } from '../../../test/helpers/rclone-serve.js';
import { skipNotice } from '../../../test/helpers/services.js';

const noRclone = rcloneUnavailable();
if (noRclone) skipNotice('rclone (serve sftp and webdav)', noRclone);

type Run = { id: string; path: string; remote_removed: string[]; remote: string[] };

describe.skipIf(noRclone !== null)('retention on a remote target (rclone serve sftp on 127.0.0.1)', () => {
  it('removes old chains there after the new upload was checked, keeps a full a kept incremental needs, and removes nothing when the upload fails', async () => {
    const sftp = await startRcloneServer('sftp');
    const db = await createTestDatabase('sqlite');
    const key = randomBytes(32).toString('base64');
    const remoteEnv = {
      RCLONE_CONFIG_OFFSITE_TYPE: 'sftp',
      RCLONE_CONFIG_OFFSITE_HOST: '127.0.0.1',
      RCLONE_CONFIG_OFFSITE_PORT: String(sftp.port),
      RCLONE_CONFIG_OFFSITE_USER: sftp.user,
      RCLONE_CONFIG_OFFSITE_PASS: sftp.obscured,
    };
    const t = backupEnv(db.url, { MAILSVC_BACKUP_STORAGE_TYPE: 'remote', MAILSVC_BACKUP_REMOTE_TARGETS: 'offsite:kept', MAILSVC_BACKUP_RETENTION_DAYS: '7', MAILSVC_BACKUP_ENCRYPTION_KEY: key, ...remoteEnv });
    const onRemote = (id: string): boolean => existsSync(join(sftp.root, 'kept', id, 'manifest.json.bin'));
    // The remote copy of a backup made 30 days older: its manifest rewritten there, through the same crypt layer
    // (retention reads the manifests the remote holds; the local copy stays as it was).
    const age = (r: Run): void => {
      const m = JSON.parse(readFileSync(join(r.path, 'manifest.json'), 'utf8')) as { completed_at: string };
      m.completed_at = new Date(Date.parse(m.completed_at) - 30 * 86_400_000).toISOString();
      const aged = join(t.dir, `aged-${r.id}.json`);
      writeFileSync(aged, JSON.stringify(m));
      const obscured = execFileSync('rclone', ['obscure', '-'], { input: key }).toString().trim();
      execFileSync('rclone', ['copyto', aged, `crypt:${r.id}/manifest.json`], {
        env: { PATH: process.env.PATH ?? '', RCLONE_CONFIG: join(t.dir, 'none.conf'), ...remoteEnv, RCLONE_CONFIG_CRYPT_TYPE: 'crypt', RCLONE_CONFIG_CRYPT_REMOTE: 'offsite:kept', RCLONE_CONFIG_CRYPT_PASSWORD: obscured, RCLONE_CONFIG_CRYPT_FILENAME_ENCRYPTION: 'off', RCLONE_CONFIG_CRYPT_DIRECTORY_NAME_ENCRYPTION: 'false' },
      });
    };
    const box = join(t.mail, 'example.com', 'user0', 'Maildir', 'cur');
    const run = async (args: string[] = [], env: Record<string, string> = {}): Promise<Run> => {
      writeMessage(box, Math.floor(Math.random() * 1e6), Date.now());
      const r = await runCli(['backup', 'run', '--json', ...args], { env: { ...t.env, ...env }, timeoutMs: 180_000 });
      expectOk(r);
      return json(r) as unknown as Run;
    };
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 1, 5);
      const a0 = await run(['--full']);
      const a1 = await run();
      expect([onRemote(a0.id), onRemote(a1.id)]).toEqual([true, true]);
      age(a0);
      age(a1);

      // The upload fails (the first target is unreachable): nothing is removed on the remote that works.
      const failed = await runCli(['backup', 'run', '--json', '--full'], { env: { ...t.env, MAILSVC_BACKUP_REMOTE_TARGETS: 'nowhere:x offsite:kept', RCLONE_CONFIG_NOWHERE_TYPE: 'sftp', RCLONE_CONFIG_NOWHERE_HOST: '127.0.0.1', RCLONE_CONFIG_NOWHERE_PORT: '1', RCLONE_CONFIG_NOWHERE_USER: 'x' }, timeoutMs: 180_000 });
      expect(failed.code).not.toBe(0);
      expect(failed.stderr).toContain('the copy to nowhere:x failed');
      expect([onRemote(a0.id), onRemote(a1.id)]).toEqual([true, true]);

      // A new full, checked on the remote: the aged chain goes there.
      const b0 = await run(['--full']);
      expect([...b0.remote_removed].sort()).toEqual([`offsite:kept/${a0.id}`, `offsite:kept/${a1.id}`].sort());
      expect([onRemote(a0.id), onRemote(a1.id), onRemote(b0.id)]).toEqual([false, false, true]);

      // An incremental on b0, then b0 aged: it stays on the remote while the kept incremental needs it.
      const b1 = await run();
      age(b0);
      const b2 = await run();
      expect(b2.remote_removed).toEqual([]);
      expect([onRemote(b0.id), onRemote(b1.id), onRemote(b2.id)]).toEqual([true, true, true]);
      // Locally nothing was aged: local retention removed nothing.
      expect(existsSync(a0.path)).toBe(true);
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
      await sftp.stop();
    }
  }, 600_000);
});
