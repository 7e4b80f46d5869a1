import { describe, expect, it } from 'vitest';
import { spawn, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import { CLI_BIN, REPO_ROOT, expectOk, json } from '../../../test/helpers/cli.js';
import { backupEnv, makeMailStorage } from '../../../test/helpers/backups.js';
import type { BackupEnv } from '../../../test/helpers/backups.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Incompressible mail, so a backup of it takes a few seconds. */
function bulkMail(t: BackupEnv, mib: number): void {
  const dir = join(t.mail, 'example.com', 'big', 'Maildir', 'cur');
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < mib; i++) writeFileSync(join(dir, `${i}.M1P1.host,S=1048576:2,S`), randomBytes(1 << 20));
}

function startBackup(t: BackupEnv) {
  const child = spawn(process.execPath, [CLI_BIN, 'backup', 'run', '--json'], { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...t.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const done = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  return { child, done, stderr: () => stderr };
}

async function waitFor(cond: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await sleep(20);
  }
}

const tmpDirs = (t: BackupEnv): string[] => (existsSync(t.local) ? readdirSync(t.local).filter((n) => n.startsWith('.tmp-')) : []);

describe('backup faults', () => {
  it('SIGKILL during a run leaves nothing that looks complete; the next run clears the stale lock and succeeds', async () => {
    const db = await createTestDatabase('sqlite');
    const t = backupEnv(db.url);
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 2, 10);
      bulkMail(t, 120);
      const run = startBackup(t);
      await waitFor(() => tmpDirs(t).length > 0);
      // Deliberately fixed: let the run get further into its work before the kill (120 messages keep
      // it busy for much longer). Wherever the kill lands, the assertions below must hold.
      await sleep(300);
      run.child.kill('SIGKILL');
      expect(await run.done).toBeNull();
      expect(existsSync(join(t.local, '.lock'))).toBe(true);
      expect(JSON.parse((await t.cli(['backup', 'list', '--json'])).stdout)).toEqual([]);

      const next = await t.cli(['backup', 'run', '--json'], 180_000);
      expectOk(next);
      expect(json(next)).toMatchObject({ type: 'full' });
      expect(tmpDirs(t)).toEqual([]);
      expect(existsSync(join(t.local, '.lock'))).toBe(false);
      expectOk(await t.cli(['backup', 'verify']));
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
    }
  }, 240_000);

  it('a second run while one runs is refused at once: exit 3, naming the running one', async () => {
    const db = await createTestDatabase('sqlite');
    const t = backupEnv(db.url);
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 1, 5);
      bulkMail(t, 120);
      const run = startBackup(t);
      await waitFor(() => existsSync(join(t.local, '.lock')) && tmpDirs(t).length > 0);
      const second = await t.cli(['backup', 'run']);
      expect(second.code).toBe(3);
      expect(second.stderr).toMatch(/^mailsvc: backup run \(started .*\) is running \(pid \d+, since .*\); wait for it to finish$/m);
      expect(await run.done).toBe(0);
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
    }
  }, 240_000);

  it('a failing dump command fails the backup (exit 1, its message), and no backup appears', async () => {
    if (!(await dialectAvailable('postgres'))) return;
    const db = await createTestDatabase('postgres');
    const bin = join(REPO_ROOT, 'var', `fake-bin-${process.pid}`);
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'pg_dump'), '#!/bin/sh\necho "pg_dump: error: query failed: server closed the connection unexpectedly" >&2\nexit 1\n');
    chmodSync(join(bin, 'pg_dump'), 0o755);
    const t = backupEnv(db.url, { PATH: `${bin}:${process.env.PATH ?? ''}` });
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 1, 5);
      const r = await t.cli(['backup', 'run']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^mailsvc: backup failed: pg_dump exited 1: pg_dump: error: query failed/m);
      expect(JSON.parse((await t.cli(['backup', 'list', '--json'])).stdout)).toEqual([]);
      expect(tmpDirs(t)).toEqual([]);
    } finally {
      rmSync(bin, { recursive: true, force: true });
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
    }
  }, 120_000);

  it('a full disk (a 3 MiB tmpfs) fails the run with a clear message and keeps the earlier backup intact', async (ctx) => {
    const db = await createTestDatabase('sqlite');
    const t = backupEnv(db.url);
    mkdirSync(t.local, { recursive: true });
    try {
      // mode 0750: a backup directory only root writes (tmpfs' default 1777 is refused, exit 78).
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=3m,mode=750', 'tmpfs', t.local]);
    } catch (err) {
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
      ctx.skip(`cannot mount a tmpfs here: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 1, 5);
      const first = json(await t.cli(['backup', 'run', '--json']));
      bulkMail(t, 6);
      const r = await t.cli(['backup', 'run']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^mailsvc: backup failed: no space left in .*: the partial backup was removed, earlier backups are untouched/m);
      expect(tmpDirs(t)).toEqual([]);
      const list = JSON.parse((await t.cli(['backup', 'list', '--json'])).stdout) as { id: string }[];
      expect(list.map((x) => x.id)).toEqual([first.id]);
      expectOk(await t.cli(['backup', 'verify']));
    } finally {
      execFileSync('umount', [t.local]);
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
    }
  }, 120_000);

  it('retention removes an old chain and keeps the newest complete chain; a run applies it', async () => {
    const db = await createTestDatabase('sqlite');
    const t = backupEnv(db.url, { MAILSVC_BACKUP_RETENTION_DAYS: '7' });
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 1, 5);
      const a0 = json(await t.cli(['backup', 'run', '--json', '--full']));
      const a1 = json(await t.cli(['backup', 'run', '--json']));
      // Age chain a by 30 days (the manifest's completed_at is what retention reads).
      for (const b of [a0, a1]) {
        const p = join(String(b.path), 'manifest.json');
        const m = JSON.parse(readFileSync(p, 'utf8')) as { completed_at: string };
        m.completed_at = new Date(Date.parse(m.completed_at) - 30 * 86_400_000).toISOString();
        writeFileSync(p, JSON.stringify(m));
      }
      const b0 = json(await t.cli(['backup', 'run', '--json', '--full']));
      expect(b0.removed).toEqual([a1.id, a0.id]);
      expect(existsSync(String(a0.path))).toBe(false);
      // An incremental on b0; then age everything: the newest complete chain (b0 + its incremental) stays.
      const b1 = json(await t.cli(['backup', 'run', '--json']));
      for (const b of [b0, b1]) {
        const p = join(String(b.path), 'manifest.json');
        const m = JSON.parse(readFileSync(p, 'utf8')) as { completed_at: string };
        m.completed_at = new Date(Date.parse(m.completed_at) - 30 * 86_400_000).toISOString();
        writeFileSync(p, JSON.stringify(m));
      }
      const b2 = json(await t.cli(['backup', 'run', '--json']));
      expect(b2).toMatchObject({ type: 'incremental', parent: b1.id, removed: [] });
      expect(existsSync(String(b0.path))).toBe(true);
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
    }
  }, 120_000);
});
