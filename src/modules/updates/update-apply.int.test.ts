/**
 * Updates end to end: releases built by `npm run release` from this working
 * tree (other version numbers), served by a local HTTPS server with the test
 * CA, applied to a temporary installation whose service (`mailsvc serve`
 * from `current`) runs as a real process on a free port, restarted through
 * the helper's verb by a test process manager. Each refusal or rollback
 * leaves the old release running with the database as it was.
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliResult } from '../../../test/helpers/cli.js';
import { TEST_CA, breakPackage, productionNodeModules, publishRelease, stageRelease, startFeedServer } from '../../../test/helpers/releases.js';
import type { FeedServer } from '../../../test/helpers/releases.js';

const PM = new URL('../../../test/helpers/update-process-manager.mjs', import.meta.url).pathname;
const PASSWORD = 'update test password 1';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}


describe('update apply end to end (SQLite, real releases, real service)', () => {
  let tmp: string;
  let feed: FeedServer;
  let env: Record<string, string>;
  let keyFile: string;
  let root: string;
  let feeds: string;
  let staged: { old: string; next: string };
  let port: number;
  let db: string;

  const cli = (args: string[], timeoutMs = 120_000): Promise<CliResult> =>
    new Promise((resolve, reject) => {
      // The CLI of the release that is current, as an administrator on the host runs it: its launcher (its own Node.js).
      import('node:child_process').then(({ spawn }) => {
        const p = spawn(join(root, 'current', 'bin', 'mailsvc'), args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        p.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
        p.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
        const t = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
        p.on('error', reject);
        p.on('close', (code) => {
          clearTimeout(t);
          resolve({ code, stdout, stderr });
        });
      }, reject);
    });
  const pm = (...args: string[]): void => void execFileSync(join(tmp, 'pm.sh'), args, { stdio: 'inherit' });
  const health = async (): Promise<{ status: string; version: string }> => {
    const res = await fetch(`http://127.0.0.1:${port}/health/details`, { headers: { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}` } });
    const body = (await res.json()) as { status: string; version: string; degraded_by?: string[] };
    // A daemon of the test host down (a component) says nothing about the release, as for the updater's own wait.
    const own = body.degraded_by?.filter((r) => !r.startsWith('component '));
    return own === undefined ? body : { ...body, status: own.length === 0 ? 'ok' : 'degraded' };
  };
  const waitHealthy = async (version: string): Promise<void> => {
    for (let i = 0; i < 200; i++) {
      const h = await health().catch(() => null);
      if (h?.status === 'ok' && h.version === version) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`service ${version} did not become healthy: ${readFileSync(join(tmp, 'state', 'mailsvc.log'), 'utf8').slice(-2000)}`);
  };
  const greylistDelay = (): string | undefined => {
    const d = new Database(db, { readonly: true });
    try {
      return (d.prepare("select value from limits where key = 'greylist-delay'").get() as { value: string } | undefined)?.value;
    } finally {
      d.close();
    }
  };
  const pid = (): string => readFileSync(join(tmp, 'state', 'mailsvc.pid'), 'utf8');
  const currentTarget = (): string => readlinkSync(join(root, 'current'));
  const publish = (pkg: string, channel: 'stable' | 'nightly' | 'both' = 'stable'): void => {
    publishRelease(pkg, feeds, `${feed.origin}/feeds`, keyFile, channel);
  };

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'mailsvc-update-'));
    const { privateKey } = generateKeyPairSync('ed25519');
    keyFile = join(tmp, 'release-key.pem');
    writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    productionNodeModules();
    staged = { old: stageRelease(join(tmp, 'stage-1.0.0'), '1.0.0', keyFile), next: stageRelease(join(tmp, 'stage-1.1.0'), '1.1.0', keyFile) };
    feeds = join(tmp, 'www', 'feeds');
    mkdirSync(feeds, { recursive: true });
    feed = await startFeedServer(join(tmp, 'www'));
    feed.origin = feed.origin.replace('localhost', '127.0.0.1');

    // The installation: releases/1.0.0 and current → it, as mailsvc install leaves it.
    root = join(tmp, 'opt');
    mkdirSync(join(root, 'releases'), { recursive: true });
    execFileSync('cp', ['-al', staged.old, join(root, 'releases', '1.0.0')]);
    symlinkSync(join('releases', '1.0.0'), join(root, 'current'));
    port = await freePort();
    const data = join(tmp, 'data');
    mkdirSync(data);
    db = join(data, 'mailsvc.db');
    mkdirSync(join(tmp, 'state'));
    writeFileSync(join(tmp, 'pm.sh'), `#!/bin/sh\nexec "${process.execPath}" "${PM}" "${join(tmp, 'state')}" "$@"\n`, { mode: 0o755 });
    env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      NODE_EXTRA_CA_CERTS: TEST_CA,
      MAILSVC_DATA_DIR: data,
      MAILSVC_CONFIG_FILE: join(data, 'mailsvc.conf'),
      MAILSVC_API_HOST: '127.0.0.1',
      MAILSVC_API_PORT: String(port),
      MAILSVC_ADMIN_PASSWORD: PASSWORD,
      MAILSVC_MFA_REQUIRED: 'no',
      MAILSVC_MAIL_AUTH_SOCKET: 'off',
      MAILSVC_POLICY_LISTEN: 'off',
      MAILSVC_HELPER: 'direct',
      MAILSVC_SERVICE_MANAGER: join(tmp, 'pm.sh'),
      MAILSVC_INSTALL_ROOT: root,
      MAILSVC_UPDATE_CHECK_URL_STABLE: `${feed.origin}/feeds/stable`,
      MAILSVC_UPDATE_CHECK_URL_NIGHTLY: `${feed.origin}/feeds/nightly`,
      MAILSVC_OUTBOUND_ALLOW_HOSTS: feed.hostPort.replace('localhost', '127.0.0.1'),
      MAILSVC_UPDATE_HEALTH_TIMEOUT: '15',
      MAILSVC_LOG_LEVEL: 'warn',
    };
    writeFileSync(join(tmp, 'state', 'env.json'), JSON.stringify(env));
    expect((await cli(['db', 'migrate'])).code).toBe(0);
    expect((await cli(['limits', 'set', 'greylist-delay', '77'])).code).toBe(0);
    pm('restart', 'mailsvc.service');
    await waitHealthy('1.0.0');
  }, 600_000);

  afterAll(async () => {
    if (tmp) {
      try {
        pm('stop', 'mailsvc.service');
      } catch {
        // nothing runs
      }
    }
    await feed?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }, 300_000);

  /** The old release still runs, untouched: same process, same link, same data. */
  const expectOldRunning = async (pidBefore: string): Promise<void> => {
    expect(currentTarget()).toBe(join('releases', '1.0.0'));
    await waitHealthy('1.0.0');
    expect(greylistDelay()).toBe('77');
    void pidBefore;
  };

  it('check reports the newer release on the selected channel, verified', async () => {
    publish(staged.next, 'both');
    const r = await cli(['settings', 'check-update', '--json']);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toMatchObject({ channel: 'stable', current_version: '1.0.0', available_version: '1.1.0', update_available: true, downgrade: false });
  }, 60_000);

  it('refuses a version.json whose signature is not the release key: nothing changes', async () => {
    publish(staged.next);
    const other = generateKeyPairSync('ed25519').privateKey;
    const json = readFileSync(join(feeds, 'stable', 'version.json'));
    writeFileSync(join(feeds, 'stable', 'version.json.sig'), sign(null, json, other).toString('base64'));
    const before = pid();
    const r = await cli(['settings', 'apply-update']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/signature of version.json does not verify/);
    expect(pid()).toBe(before);
    await expectOldRunning(before);
  }, 60_000);

  it('refuses a tampered archive, even with a matching .sha256 beside it: nothing changes', async () => {
    publish(staged.next);
    const archive = join(feeds, 'stable', '1.1.0', 'mailsvc-1.1.0.tar.gz');
    const bytes = readFileSync(archive);
    bytes[bytes.length - 100] = (bytes[bytes.length - 100] ?? 0) ^ 0xff;
    writeFileSync(archive, bytes);
    const { createHash } = await import('node:crypto');
    writeFileSync(`${archive}.sha256`, `${createHash('sha256').update(bytes).digest('hex')}  mailsvc-1.1.0.tar.gz\n`);
    const before = pid();
    const r = await cli(['settings', 'apply-update']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/does not match the signed/);
    expect(pid()).toBe(before);
    await expectOldRunning(before);
  }, 60_000);

  it('rolls back a release whose migrations fail: link, rows and the running service as before', async () => {
    publish(breakPackage(staged.next, join(tmp, 'broken-migrate'), '1.2.0', { failMigrate: true }));
    const before = pid();
    const r = await cli(['settings', 'apply-update']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/migrations of 1\.2\.0 failed.*migration 0099_broken failed.*rolled back/);
    expect(r.stderr).toMatch(/database snapshot is restored/);
    // Never switched, never restarted: the same process serves on.
    expect(pid()).toBe(before);
    await expectOldRunning(before);
  }, 120_000);

  it('rolls back a release that does not start: the old one is restarted and answers, the data restored', async () => {
    publish(breakPackage(staged.next, join(tmp, 'broken-start'), '1.3.0', { failStart: true }));
    const t0 = Date.now();
    const r = await cli(['settings', 'apply-update', '--json']);
    const seconds = (Date.now() - t0) / 1000;
    expect(r.code).toBe(1);
    const job = JSON.parse(r.stdout) as { state: string; message: string };
    expect(job.state).toBe('failed');
    expect(job.message).toMatch(/did not answer \/health\/details.*rolled back.*current points at .*1\.0\.0 again.*1\.0\.0 runs and answers/);
    await expectOldRunning(pid());
    process.stdout.write(`rollback of a release that does not start: ${seconds.toFixed(1)} s (health timeout 15 s)\n`);
  }, 120_000);

  it('applies the next release: new version answers from current, migrations kept, data intact', async () => {
    publish(staged.next);
    const before = pid();
    const t0 = Date.now();
    const r = await cli(['settings', 'apply-update', '--json']);
    const seconds = (Date.now() - t0) / 1000;
    expect(r.code, r.stderr).toBe(0);
    const job = JSON.parse(r.stdout) as { state: string; result: { from: string; to: string; seconds: number; steps: { step: string }[] } };
    expect(job.state).toBe('succeeded');
    expect(job.result).toMatchObject({ from: '1.0.0', to: '1.1.0', outcome: 'updated' });
    expect(job.result.steps.map((s) => s.step)).toEqual(['check', 'download', 'verify', 'unpack', 'snapshot', 'migrate', 'switch', 'restart', 'health']);
    expect(currentTarget()).toBe(join('releases', '1.1.0'));
    // Root's code (the job runs as root here, as its unit does): root-owned, writable by no one else.
    for (const f of ['', 'dist', 'dist/bundle/mailsvc.js', 'package.json']) {
      const st = lstatSync(join(root, 'releases', '1.1.0', f));
      expect({ f, uid: st.uid, gid: st.gid, groupOrOtherWritable: (st.mode & 0o022) !== 0, setid: (st.mode & 0o6000) !== 0 }).toEqual({ f, uid: 0, gid: 0, groupOrOtherWritable: false, setid: false });
    }
    // The snapshot in root's 0700 directory beside the releases, not in the service's data directory.
    expect((job.result as unknown as { snapshot: string }).snapshot.startsWith(join(root, 'snapshots') + '/')).toBe(true);
    expect(lstatSync(join(root, 'snapshots')).mode & 0o777).toBe(0o700);
    expect(pid()).not.toBe(before);
    await waitHealthy('1.1.0');
    expect(greylistDelay()).toBe('77');
    process.stdout.write(`update 1.0.0 → 1.1.0: ${seconds.toFixed(1)} s (job ${job.result.seconds.toFixed(1)} s)\n`);
  }, 120_000);

  it('POST /admin/settings/apply-update queues the job, the helper starts it outside the service, GET /admin/jobs/{id} follows it', async () => {
    // 1.2.0 carries a data migration (greylist-delay 77 → 1) and starts normally.
    publish(breakPackage(staged.next, join(tmp, 'good-1.2.0'), '1.2.0', {}));
    const auth = { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}`, 'content-type': 'application/json' };
    const started = await fetch(`http://127.0.0.1:${port}/admin/settings/apply-update`, { method: 'POST', headers: auth, body: '{}' });
    expect(started.status).toBe(202);
    const { job_id: id } = (await started.json()) as { job_id: string };
    let job: { state: string; progress: number; message: string; result: { to?: string } | null } | null = null;
    const seen = new Set<string>();
    for (let i = 0; i < 600; i++) {
      // The service restarts under us: a refused connection is part of the update.
      job = await fetch(`http://127.0.0.1:${port}/admin/jobs/${id}`, { headers: auth }).then((r) => (r.status === 200 ? (r.json() as Promise<typeof job>) : null), () => null);
      if (job) seen.add(job.state);
      if (job && (job.state === 'succeeded' || job.state === 'failed')) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(job?.state, `${job?.message} ${readFileSync(join(tmp, 'state', 'update.log'), 'utf8').slice(-1500)}`).toBe('succeeded');
    expect(job?.result).toMatchObject({ from: '1.1.0', to: '1.2.0' });
    expect(seen.has('running')).toBe(true);
    expect(currentTarget()).toBe(join('releases', '1.2.0'));
    await waitHealthy('1.2.0');
    expect(greylistDelay()).toBe('1');
    // Nothing newer now: the route refuses before queueing anything.
    const again = await fetch(`http://127.0.0.1:${port}/admin/settings/apply-update`, { method: 'POST', headers: auth, body: '{}' });
    expect(again.status).toBe(409);
  }, 180_000);

  it('refuses to go back to an older release unless asked, and nothing changes', async () => {
    publish(staged.old);
    const check = await cli(['settings', 'check-update', '--json']);
    expect(JSON.parse(check.stdout)).toMatchObject({ current_version: '1.2.0', available_version: '1.0.0', update_available: false, downgrade: true, downgrade_allowed: true });
    const r = await cli(['settings', 'apply-update']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/older than 1\.2\.0/);
    expect(currentTarget()).toBe(join('releases', '1.2.0'));
    await waitHealthy('1.2.0');
    // The nightly channel is its own tree: switching to it changes what is offered.
    expect((await cli(['settings', 'set', '--update-channel', 'nightly'])).code).toBe(0);
    const nightly = await cli(['settings', 'check-update', '--json']);
    expect(JSON.parse(nightly.stdout)).toMatchObject({ channel: 'nightly', available_version: '1.1.0', update_available: false, downgrade: true });
  }, 60_000);
});
