import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb } from '../src/db/database.js';
import { STORED_KEYS } from '../src/modules/backups/stored-settings.js';
import { backupEnv, makeMailStorage } from './helpers/backups.js';
import type { BackupEnv } from './helpers/backups.js';
import { expectOk, runCli } from './helpers/cli.js';
import type { CliResult } from './helpers/cli.js';
import { createTestDatabase, dialectAvailable } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { snapshotTree, treeChanges } from './helpers/fs-snapshot.js';
import { forceSecret, markerScript, serviceUserUnavailable } from './helpers/root-inputs.js';
import { rcloneUnavailable } from './helpers/rclone-serve.js';
import { skipNotice } from './helpers/services.js';

const why = serviceUserUnavailable() ?? rcloneUnavailable() ?? ((await dialectAvailable('postgres')) ? null : 'PostgreSQL on 127.0.0.1:5432 is not reachable');
if (why) skipNotice('root, rclone and PostgreSQL', `${why}: the root backup run reads what the service wrote`);

const SEED = 3302;
/** Root runs per input kind: 4 kinds × 3 = 12 real root runs, and the review's 2 attacks, bounded so the file stays well under two minutes. */
const PER_KIND = 3;

/** One hostile write the service could make straight into the database, and the root command that then reads it. */
type Case =
  | { kind: 'setting'; key: string; value: string; remote: boolean }
  | { kind: 'retention'; value: string }
  | { kind: 'secret'; remote: string; secrets: Record<string, string> }
  | { kind: 'job'; jobKind: string; input: string };

/**
 * Issue 33, finding 2, end to end: for each input of docs/security.md's
 * "What root reads" that the service user can write (stored backup settings,
 * the retention limit, sealed remote secrets, job rows), a few generated
 * hostile values are written straight into the database, then the real
 * root command runs (`mailsvc backup run`, or `backup run-job <id>` for a
 * job row). Every hostile value names a marker program (and paths in a decoy
 * directory): nothing may run it, no file outside the unit's outputs (the
 * backup directory) may change, and the command either refuses with a clear
 * message and a non-zero exit or does the harmless thing (a backup, no
 * earlier backup lost).
 */
describe.skipIf(why !== null)('root inputs, end to end: hostile values the service stores, then root\'s real backup run', { timeout: 300_000 }, () => {
  let db: TestDatabase;
  let t: BackupEnv;
  let marker: string;
  let script: string;
  let decoy: string;
  let cases: Case[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('postgres');
    t = backupEnv(db.url);
    const work = join(t.dir, 'work');
    decoy = join(t.dir, 'decoy');
    mkdirSync(work);
    mkdirSync(decoy);
    writeFileSync(join(decoy, 'rclone.conf'), '[x]\ntype = local\n');
    writeFileSync(join(decoy, 'keep'), randomBytes(64));
    marker = join(work, 'ran-as-root');
    script = markerScript(work, marker);
    expectOk(await t.cli(['db', 'migrate']));
    makeMailStorage(t.mail, 1, 2);
    // A first, clean backup: it makes the root-only manifest key (the unit's one-time output) and a backup retention must keep.
    expectOk(await t.cli(['backup', 'run', '--json'], 120_000));
    cases = generate(script, marker, decoy);
  });
  afterAll(async () => {
    rmSync(t.dir, { recursive: true, force: true });
    await db.drop();
  });

  /** Writes the case's rows as the service could (no CLI, no API checks); returns the root command's arguments. */
  const write = async (c: Case): Promise<string[]> => {
    const d = createDb(db.url);
    try {
      await d.deleteFrom('service_settings').where('key', 'like', 'backup.%').execute();
      await d.deleteFrom('limits').where('key', '=', 'backup-retention-days').execute();
      await d.deleteFrom('backup_secrets').where('name', 'like', 'remote:%').execute();
      const setting = (key: string, value: string) => d.insertInto('service_settings').values({ key: `backup.${key}`, value, updated_at: Date.now() }).execute();
      if (c.kind === 'setting') {
        await setting(c.key, c.value);
        if (c.remote && c.key !== 'STORAGE_TYPE') await setting('STORAGE_TYPE', 'remote');
      } else if (c.kind === 'retention') {
        await d.insertInto('limits').values({ key: 'backup-retention-days', value: c.value, updated_at: Date.now() }).execute();
      } else if (c.kind === 'secret') {
        await setting('REMOTE_TARGETS', `${c.remote}:x`);
        await setting('STORAGE_TYPE', 'remote');
      } else {
        const id = randomBytes(8).toString('hex');
        await d.insertInto('jobs').values({ id, kind: c.jobKind, input: c.input, state: 'queued', progress: 0, message: 'queued', created_at: Date.now() }).execute();
        return ['backup', 'run-job', id];
      }
    } finally {
      await d.destroy();
    }
    if (c.kind === 'secret') for (const [option, value] of Object.entries(c.secrets)) await forceSecret(t.env, `remote:${c.remote}:${option}`, value);
    return ['backup', 'run', '--json'];
  };

  it(`hostile stored values (seed ${SEED}, ${PER_KIND} per input kind): nothing runs, nothing outside the backup directory changes, a clear refusal or a harmless backup`, async () => {
    expect(cases).toHaveLength(4 * PER_KIND + 2);
    const seen: string[] = [];
    for (const c of cases) {
      const args = await write(c);
      const outside = snapshotTree(t.dir, [t.local]);
      const before = backupsIn(t.local);
      // Root's environment: one remote root defines (webdav on a closed port), as backup-secrets.conf would.
      const r: CliResult = await runCli(args, { env: { ...t.env, RCLONE_CONFIG_OFFSITE_TYPE: 'webdav', RCLONE_CONFIG_OFFSITE_URL: 'https://127.0.0.1:1/' }, timeoutMs: 120_000 });
      const label = `${JSON.stringify(c)} → exit ${r.code}: ${r.stderr.trim().split('\n').slice(-1)[0] ?? ''}`;
      seen.push(label);
      expect(existsSync(marker), label).toBe(false);
      expect(treeChanges(outside, snapshotTree(t.dir, [t.local])), label).toEqual([]);
      if (r.code === 0) {
        // The harmless thing: no earlier backup went, and a backup (not a verify) made one.
        for (const id of before) expect(backupsIn(t.local), label).toContain(id);
        if (!(c.kind === 'job' && c.jobKind === 'backup-verify')) expect(backupsIn(t.local).length, label).toBeGreaterThan(before.length);
      } else {
        expect(r.code, label).not.toBeNull();
        expect(r.stderr.trim(), label).not.toBe('');
        // A refusal, never a crash: no stack trace, and the hostile value is not echoed as a program's output.
        expect(r.stderr, label).not.toMatch(/\n\s+at .+:\d+:\d+/);
        expect(r.stdout + r.stderr, label).not.toContain('token\n');
      }
    }
    console.log(`root-inputs end to end (seed ${SEED}):\n${seen.join('\n')}`);
  });
});

/** The backup directories in LOCAL_DIR (each holds a manifest). */
function backupsIn(local: string): string[] {
  if (!existsSync(local)) return [];
  return readdirSync(local).filter((n) => existsSync(join(local, n, 'manifest.json'))).sort();
}

/** PER_KIND seeded cases of each kind; every hostile text names the marker program or the decoy directory (cut to what its column holds). */
function generate(script: string, marker: string, decoy: string): Case[] {
  const words = [
    `$(${script})`, `\`${script}\``, `;${script}`, `|${script}`, script, `x\nExecStartPre=${script}`, `touch ${marker}`,
    `--config=${decoy}/rclone.conf`, `-vv --config ${decoy}/rclone.conf`, decoy, `../../${decoy}`, `:local:${decoy}`, `local:${decoy}`,
    `offsite,bearer_token_command=${script}:`, `offsite:../../..${decoy}`, `mailsvccrypt:${decoy}`, `offsite:-${decoy}`,
    '-1', '0', '99999999999999999999', '1e309', 'NaN', '1.5', '__proto__', 'constructor',
  ];
  const hostile = fc.oneof(fc.constantFrom(...words), fc.tuple(fc.constantFrom(...words), fc.string({ maxLength: 6 }), fc.constantFrom(...words)).map((p) => p.join('')));
  const option = fc.oneof(fc.constantFrom('bearer_token_command', 'ssh', 'key_file', 'config', 'type', 'url', 'pass', 'remote', 'pubkey_file'), hostile);
  const json = fc.oneof(
    hostile,
    hostile.map((v) => JSON.stringify({ full: v })),
    hostile.map((v) => JSON.stringify({ full: true, localDir: v, command: v, targets: [v] })),
    fc.constant('{"__proto__":{"full":true,"localDir":"/"}}'),
  );
  const arbs: fc.Arbitrary<Case>[] = [
    fc.record({ kind: fc.constant('setting' as const), key: fc.constantFrom(...STORED_KEYS, 'LOCAL_DIR', 'CONFIG_PATHS', 'MANIFEST_KEY_FILE'), value: hostile.map((v) => v.slice(0, 255)), remote: fc.boolean() }),
    fc.record({ kind: fc.constant('retention' as const), value: fc.oneof(hostile, fc.integer({ min: -100_000, max: 100_000 }).map(String)).map((v) => v.slice(0, 32)) }),
    fc.record({ kind: fc.constant('secret' as const), remote: fc.constantFrom('offsite', 'pwn'), secrets: fc.tuple(option.map((o) => o.slice(0, 150)), hostile).map(([o, v]) => ({ [o]: v })) }),
    fc.record({ kind: fc.constant('job' as const), jobKind: fc.oneof(fc.constantFrom('backup', 'backup-verify', 'update', 'sample'), hostile.map((s) => s.slice(0, 64))), input: json }),
  ];
  // The review's attack first, as written: a token program on root's remote, and a remote of the service's own.
  const review: Case[] = [
    { kind: 'secret', remote: 'offsite', secrets: { bearer_token_command: script } },
    { kind: 'secret', remote: 'pwn', secrets: { type: 'webdav', url: 'https://127.0.0.1:1/', bearer_token_command: script } },
  ];
  return [...review, ...arbs.flatMap((a, i) => fc.sample(a, { seed: SEED + i, numRuns: PER_KIND }))];
}
