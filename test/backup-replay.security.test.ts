import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backupGroup } from '../src/modules/backups/local-dir.js';
import { BACKUP_DIR, ownershipPlan } from '../src/modules/install/ownership-plan.js';
import { backupEnv, makeMailStorage, treeSnapshot } from './helpers/backups.js';
import type { BackupEnv } from './helpers/backups.js';
import { expectOk } from './helpers/cli.js';
import { createTestDatabase, dialectAvailable } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { snapshotTree, treeChanges } from './helpers/fs-snapshot.js';
import { skipNotice } from './helpers/services.js';
import { NOBODY, unprivilegedUnavailable } from './helpers/unprivileged-client.js';

const why = unprivilegedUnavailable() ?? ((await dialectAvailable('postgres')) ? null : 'PostgreSQL on 127.0.0.1:5432 is not reachable');
if (why) skipNotice('root, setpriv and PostgreSQL', `${why}: the service user against root's backup directory`);

/**
 * Issue 33, finding 2, replay: a manifest's HMAC proves root made a backup,
 * not when. Decided: the backup directory is root's (the service user, in
 * the backups' group, only reads it), so the service cannot place an old
 * signed backup where root's runs, verify and `backup list` look; and a
 * restore as root refuses a --source another user could write, saying to
 * copy the chain into a root-only directory first.
 */
describe.skipIf(why !== null)('backup replay: the service user cannot place an old signed backup where root takes one', { timeout: 300_000 }, () => {
  let db: TestDatabase;
  let t: BackupEnv;
  let ids: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    t = backupEnv(db.url);
    // Reachable by nobody down to LOCAL_DIR, so what stops it is LOCAL_DIR's own owner and mode.
    chmodSync(t.dir, 0o755);
    expectOk(await t.cli(['db', 'migrate']));
    makeMailStorage(t.mail, 1, 2);
    expectOk(await t.cli(['backup', 'run', '--full', '--json']));
    expectOk(await t.cli(['backup', 'run', '--json']));
    ids = readdirSync(t.local).filter((n) => !n.startsWith('.')).sort();
  });
  afterAll(async () => {
    rmSync(t.dir, { recursive: true, force: true });
    await db.drop();
  });

  it('LOCAL_DIR as installed and as a root run makes it: root:<backups group> 0750, backups 0750/0640; the service user (nobody in that group) can create, replace or remove nothing in it', () => {
    expect(ownershipPlan('/opt/mailsvc').find((e) => e.path === BACKUP_DIR)).toMatchObject({ kind: 'dir', owner: 'root', mode: 0o750 });
    const st = statSync(t.local);
    expect([st.uid, st.gid, st.mode & 0o7777]).toEqual([0, backupGroup(), 0o750]);
    expect(ids.length).toBeGreaterThanOrEqual(2);
    const [old, newest] = ids as [string, string];
    const before = snapshotTree(t.local);
    const attempts = [
      `mkdir '${t.local}/20200101-000000-000-full'`,
      `cp -a '${t.local}/${old}' '${t.local}/replayed'`,
      `cp '${t.local}/${old}/manifest.json' '${t.local}/${newest}/manifest.json'`,
      `: > '${t.local}/${newest}/planted'`,
      `mv '${t.local}/${old}' '${t.local}/${newest}-x'`,
      `rm -f '${t.local}/${newest}/manifest.json'`,
      `ln -s '${t.local}/${old}' '${t.local}/link'`,
      `chmod 777 '${t.local}'`,
    ];
    const script = attempts.map((a) => `if ( ${a} ) 2>/dev/null; then echo "DID: ${a.replace(/'/g, '')}"; fi`).join('\n');
    const r = spawnSync('setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, `--groups=${backupGroup()}`, 'sh', '-c', script], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('');
    expect(treeChanges(before, snapshotTree(t.local))).toEqual([]);
  });

  it('restore as root refuses a --source (or a manifest in it) another user could write, says why and how to proceed, changes nothing; a root-only copy restores', async () => {
    const [old] = ids as [string];
    const mail = treeSnapshot(t.mail);
    const place = (name: string): string => {
      const d = join(t.dir, name);
      mkdirSync(d, { mode: 0o755 });
      cpSync(join(t.local, old), join(d, old), { recursive: true, preserveTimestamps: true });
      return d;
    };
    // A directory the service user owns (it copied an old signed backup there).
    const shared = place('service-owned');
    chownSync(shared, NOBODY, NOBODY);
    // A root directory whose copy has a manifest the service user may rewrite.
    const loose = place('loose-manifest');
    chownSync(join(loose, old, 'manifest.json'), NOBODY, NOBODY);
    for (const [src, what] of [[shared, `${shared} is owned by uid ${NOBODY}`], [join(loose, old, 'manifest.json'), `${join(loose, old, 'manifest.json')} is owned by uid ${NOBODY}`]] as const) {
      const source = src.endsWith('manifest.json') ? join(loose, old) : join(shared, old);
      const r = await t.cli(['restore', '--source', source, '--restore-files']);
      expect(r.code, r.stderr).toBe(78);
      expect(r.stderr).toContain(`refusing to restore, nothing was changed: ${what}`);
      expect(r.stderr).toContain('another user could have placed an old signed backup there');
      expect(r.stderr).toContain('into a directory only root can write');
      expect(treeSnapshot(t.mail)).toEqual(mail);
    }
    // The way out the message gives: a copy only root can write restores.
    const safe = place('root-copy');
    chmodSync(safe, 0o700);
    expectOk(await t.cli(['restore', '--source', join(safe, old), '--restore-files', '--json']));
  });
});
