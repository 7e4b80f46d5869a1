import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupEnv, makeMailStorage } from './helpers/backups.js';
import type { BackupEnv } from './helpers/backups.js';
import { createDb } from '../src/db/database.js';
import { createTestDatabase, dialectAvailable } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { expectOk, runCli } from './helpers/cli.js';
import { snapshotTree, treeChanges } from './helpers/fs-snapshot.js';
import { forceSecret, markerScript, serviceCli, serviceUserUnavailable } from './helpers/root-inputs.js';
import { rcloneUnavailable } from './helpers/rclone-serve.js';
import { skipNotice } from './helpers/services.js';

const why = serviceUserUnavailable() ?? rcloneUnavailable() ?? ((await dialectAvailable('postgres')) ? null : 'PostgreSQL on 127.0.0.1:5432 is not reachable');
if (why) skipNotice('root, setpriv, rclone and PostgreSQL', `${why}: the root backup run reads what the service user wrote`);

/**
 * Issue 33, finding 1: what root's backup job reads from the service's
 * database steers nothing root runs. The service's side is the CLI as an
 * unprivileged user (nobody) on the shared PostgreSQL database, and rows
 * forced into the database directly (a service with its own database
 * access); root's side is `mailsvc backup run` as root, with root's own
 * environment. The marker is a program that leaves a file behind when
 * anything runs it.
 */
describe.skipIf(why !== null)('root inputs: the backup job takes only allow-listed data from the service\'s database', { timeout: 600_000 }, () => {
  let db: TestDatabase;
  let t: BackupEnv;
  let work: string;
  let marker: string;
  let script: string;
  let service: ReturnType<typeof serviceCli>;

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    t = backupEnv(db.url);
    work = mkdtempSync(join(tmpdir(), 'mailsvc-rootinputs-'));
    marker = join(work, 'ran-as-root');
    script = markerScript(work, marker);
    expectOk(await t.cli(['db', 'migrate']));
    makeMailStorage(t.mail, 1, 3);
    service = serviceCli(t.env);
  });
  afterAll(async () => {
    for (const d of [t.dir, work]) rmSync(d, { recursive: true, force: true });
    await db.drop();
  });

  const clearSecrets = async (): Promise<void> => {
    const d = createDb(db.url);
    try {
      await d.deleteFrom('backup_secrets').where('name', 'like', 'remote:%').execute();
    } finally {
      await d.destroy();
    }
  };

  it('refuses a remote definition or a command stored by the service user, and root\'s run refuses a forced one and runs nothing', async () => {
    // The attack of the review, as the service user: a target on a remote of its own, a webdav remote whose token comes from a program.
    expectOk(await service(['backup', 'set', 'REMOTE_TARGETS', 'pwn:x']));
    expectOk(await service(['backup', 'set', 'STORAGE_TYPE', 'remote']));
    for (const [option, value] of [['type', 'webdav'], ['url', 'http://127.0.0.1:1'], ['bearer_token_command', script], ['ssh', script], ['key_file', '/etc/shadow']] as const) {
      const r = await service(['backup', 'remote-credential', 'pwn', option], `${value}\n`);
      expect(r.code, `${option}: ${r.stderr}`).not.toBe(0);
      expect(r.stderr).toContain('root\'s');
    }
    // A secret option in a shape the option does not have: refused too, the value not quoted.
    const multi = await service(['backup', 'remote-credential', 'pwn', 'key_pem'], 'not a key\n');
    expect(multi.code).not.toBe(0);
    expect(multi.stderr).not.toContain('not a key');

    // Forced into the database directly: root's run refuses the remote before making anything, and the program never runs.
    await forceSecret(t.env, 'remote:pwn:type', 'webdav');
    await forceSecret(t.env, 'remote:pwn:url', 'http://127.0.0.1:1');
    await forceSecret(t.env, 'remote:pwn:bearer_token_command', script);
    const outside = snapshotTree(t.dir, [t.local]);
    const run = await t.cli(['backup', 'run', '--json'], 180_000);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('refusing the remote target, nothing was run');
    expect(existsSync(marker)).toBe(false);
    expect(treeChanges(outside, snapshotTree(t.dir, [t.local]))).toEqual([]);

    // Root defines `pwn` itself (webdav): the stored command is still not one of the secrets root takes from the database.
    await clearSecrets();
    await forceSecret(t.env, 'remote:pwn:bearer_token_command', script);
    const run2 = await runCli(['backup', 'run', '--json'], { env: { ...t.env, RCLONE_CONFIG_PWN_TYPE: 'webdav', RCLONE_CONFIG_PWN_URL: 'http://127.0.0.1:1' }, timeoutMs: 180_000 });
    expect(run2.code).not.toBe(0);
    expect(run2.stderr).toContain('"bearer_token_command" of pwn is not one mailsvc takes');
    expect(existsSync(marker)).toBe(false);
    await clearSecrets();
  });
});

