import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, writeFileSync, readSync, readdirSync, rmSync, statSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backupEnv, makeMailStorage } from '../../../test/helpers/backups.js';
import { buildCli, runCli } from '../../../test/helpers/cli.js';
import { REDIS_URL } from '../../../test/helpers/dialects.js';
import { findProgram, freePort } from '../../../test/helpers/mail-daemons.js';
import { queuePostfixUnavailable, startQueuePostfix } from '../../../test/helpers/postfix-queue.js';
import type { QueuePostfix } from '../../../test/helpers/postfix-queue.js';
import { redisAvailable } from '../../../test/helpers/redis.js';
import { skipNotice } from '../../../test/helpers/services.js';
import type { DoctorReport } from './schema.js';

/**
 * `mailsvc doctor` against the real daemons of the test set-up (a Postfix of
 * its own, Redis, the helper socket setting, the mail storage, a real backup
 * and its verify), each check shown failing for the reason it names.
 */
const noPostfix = queuePostfixUnavailable();
if (noPostfix) skipNotice('Postfix (postqueue, root)', noPostfix);

describe('mailsvc doctor on this machine', () => {
  let dir: string;
  let storage: string;
  let closed: string;
  let pf: QueuePostfix | undefined;
  const env = (extra: Record<string, string> = {}) => ({
    MAILSVC_DATA_DIR: dir, MAILSVC_HELPER: 'direct', MAILSVC_MAIL_STORAGE: storage, MAILSVC_RSPAMD_CONTROLLER_URL: closed,
    MAILSVC_DOCTOR_TLS_PORTS: 'off', MAILSVC_POLICY_LISTEN: 'off', MAILSVC_MAIL_AUTH_SOCKET: 'off', MAILSVC_BACKUP_LOCAL_DIR: join(dir, 'backups'),
    ...(pf ? { MAILSVC_POSTFIX_CONFIG_DIR: pf.configDir } : {}), ...extra,
  });
  const doctor = async (extra: Record<string, string> = {}) => {
    const r = await runCli(['doctor', '--json'], { env: env(extra), timeoutMs: 90_000 });
    return { code: r.code, stderr: r.stderr, report: JSON.parse(r.stdout) as DoctorReport };
  };
  const line = (r: DoctorReport, id: string) => r.checks.find((c) => c.id === id);

  beforeAll(async () => {
    buildCli();
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-doctor-'));
    storage = join(dir, 'vmail');
    makeMailStorage(storage, 1, 1);
    closed = `http://127.0.0.1:${await freePort()}`;
    if (!noPostfix) pf = await startQueuePostfix();
    expect((await runCli(['db', 'migrate'], { env: env() })).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await pf?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('prints the summary line first, one line per check, each failing line with its fix; exit 1 when a check fails', async () => {
    const r = await runCli(['doctor'], { env: env(), timeoutMs: 90_000 });
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/^needs attention: \d+ failing, \d+ warnings?( \(\d+ could not be checked\))?$/);
    expect(r.stdout).toMatch(/^FAIL {2}last backup +no backup yet\n +fix: run mailsvc backup run --full/m);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^mailsvc: needs attention: /);
    const j = await doctor();
    // The human lines are the JSON's checks, one each, in order.
    expect(lines.filter((l) => /^(ok {2}|WARN|FAIL|\?{4}) /.test(l))).toHaveLength(j.report.checks.length);
    expect(j.code).toBe(1);
  }, 120_000);

  it.skipIf(noPostfix !== null)('Postfix: running is ok with its version; stopped is fail "not running" with the command that starts it', async () => {
    const up = line((await doctor()).report, 'daemon.postfix');
    expect(up).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^running, version 3\.\d/), fix: null });
    const stopped = await startQueuePostfix();
    execFileSync('postfix', ['-c', stopped.configDir, 'stop']);
    try {
      const down = line((await doctor({ MAILSVC_POSTFIX_CONFIG_DIR: stopped.configDir })).report, 'daemon.postfix');
      expect(down).toMatchObject({ status: 'fail', detail: expect.stringMatching(/^not running/), fix: expect.stringMatching(/^start it \(systemctl start postfix\)/) });
      // topology show says the same words for the same state.
      const topo = await runCli(['topology', 'show', '--json'], { env: env({ MAILSVC_POSTFIX_CONFIG_DIR: stopped.configDir }), timeoutMs: 60_000 });
      const comp = (JSON.parse(topo.stdout) as { components: Array<{ name: string; detail: string | null }> }).components.find((c) => c.name === 'postfix');
      expect(comp?.detail).toBe(down?.detail);
    } finally {
      await stopped.stop();
    }
  }, 120_000);

  it('Redis: a configured Redis that answers is ok; a stopped Redis URL is fail with what to start', async () => {
    const refused = line((await doctor({ MAILSVC_REDIS_URL: `redis://127.0.0.1:${await freePort()}` })).report, 'daemon.redis');
    expect(refused).toMatchObject({ status: 'fail', fix: expect.stringMatching(/start Redis .* or correct MAILSVC_REDIS_URL/) });
    expect(refused?.detail).toMatch(/ECONNREFUSED|refused|connect/i);
    if (!(await redisAvailable())) return skipNotice('Redis', `nothing answers at ${REDIS_URL}`);
    expect(line((await doctor({ MAILSVC_REDIS_URL: REDIS_URL })).report, 'daemon.redis')).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^running, version \d+\.\d+.*, at 127\.0\.0\.1:6379$/) });
  }, 120_000);

  it('the helper: a missing socket is fail with "start mailsvc-helper.socket"; a daemon not installed here is unknown, once, with the package to install', async () => {
    const { report: r } = await doctor({ MAILSVC_HELPER: `unix:${join(dir, 'no-helper.sock')}` });
    expect(line(r, 'daemon.helper')).toMatchObject({ status: 'fail', detail: `no helper socket at ${join(dir, 'no-helper.sock')}`, fix: 'start mailsvc-helper.socket (systemctl enable --now mailsvc-helper.socket)' });
    // Where nginx is installed (the certificate tests need it), the package database says it is not: dpkg-query answers
    // as it does for a package never installed, for nginx only. The doctor reads "installed" from dpkg, as on a real host.
    const dpkg = findProgram('dpkg-query');
    if (findProgram('nginx') !== null) {
      if (!dpkg) return skipNotice('a daemon that is not installed', 'nginx is installed here and there is no dpkg-query to hide it');
      mkdirSync(join(dir, 'no-nginx-bin'), { recursive: true });
      writeFileSync(join(dir, 'no-nginx-bin', 'dpkg-query'), `#!/bin/sh\nfor a; do last="$a"; done\nif [ "$last" = nginx ]; then echo "dpkg-query: no packages found matching nginx" >&2; exit 1; fi\nexec ${dpkg} "$@"\n`, { mode: 0o755 });
    }
    const hidden = findProgram('nginx') === null ? r : (await doctor({ MAILSVC_HELPER: `unix:${join(dir, 'no-helper.sock')}`, PATH: `${join(dir, 'no-nginx-bin')}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` })).report;
    expect(hidden.checks.filter((c) => c.id === 'daemon.nginx')).toEqual([{ id: 'daemon.nginx', name: 'nginx', status: 'unknown', detail: 'not installed here', fix: 'install nginx if this host should run it' }]);
  }, 120_000);

  it('nftables not running: ok while mailsvc\'s firewall is off (never applied), fail with "systemctl enable --now nftables" once it is on', async () => {
    const real = findProgram('systemctl');
    if (!real) return skipNotice('nftables not running', 'no systemctl here');
    if (findProgram('dpkg-query') === null || execFileSync('dpkg-query', ['-W', '-f=${Status}', 'nftables'], { encoding: 'utf8' }).trim() !== 'install ok installed') {
      return skipNotice('nftables not running', 'the nftables package is not installed here');
    }
    // systemd does not run here: systemctl answers for nftables.service as on a host where it is installed but not started (exit 3).
    const bin = join(dir, 'nft-inactive-bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'systemctl'), `#!/bin/sh\nif [ "$1" = is-active ] && [ "$2" = nftables ]; then echo inactive; exit 3; fi\nexec ${real} "$@"\n`, { mode: 0o755 });
    const path = { PATH: `${bin}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` };
    const off = line((await doctor(path)).report, 'daemon.nftables');
    expect(off).toEqual({ id: 'daemon.nftables', name: 'nftables', status: 'ok', detail: "not running; not needed while mailsvc's firewall is off (firewall-enabled no); before switching it on: systemctl enable --now nftables", fix: null });
    // /health/details and topology read the same component: unknown (not needed), never down, so the host is not degraded by it.
    const topo = await runCli(['topology', 'show', '--json'], { env: env(path), timeoutMs: 60_000 });
    const comp = (JSON.parse(topo.stdout) as { components: Array<{ name: string; status: string; detail: string | null }> }).components.find((c) => c.name === 'nftables');
    expect(comp).toMatchObject({ status: 'unknown', detail: "not running; not needed while mailsvc's firewall is off (firewall-enabled no)" });
    // The firewall switched on (stored as the service stores it; applying it would touch this machine's ruleset).
    const { default: Database } = await import('better-sqlite3');
    const sqlite = new Database(join(dir, 'mailsvc.db'));
    sqlite.prepare('INSERT INTO firewall_settings (id, enabled, rules_json, updated_at) VALUES (1, ?, ?, ?)').run('yes', '[]', Date.now());
    try {
      const on = line((await doctor(path)).report, 'daemon.nftables');
      expect(on).toMatchObject({ status: 'fail', detail: 'not running (systemd: inactive)', fix: expect.stringMatching(/^systemctl enable --now nftables /) });
      expect(on?.fix).not.toMatch(/systemctl start/);
    } finally {
      sqlite.prepare('DELETE FROM firewall_settings').run();
      sqlite.close();
    }
  }, 180_000);

  it('disk space: a missing mail storage is fail; a file system over MAILSVC_REPORT_DISK_PERCENT is warn', async () => {
    const { report: r } = await doctor({ MAILSVC_MAIL_STORAGE: join(dir, 'nowhere'), MAILSVC_REPORT_DISK_PERCENT: '1' });
    expect(line(r, 'disk.mail-storage')).toMatchObject({ status: 'fail', detail: `${join(dir, 'nowhere')} does not exist`, fix: expect.stringMatching(/MAILSVC_MAIL_STORAGE/) });
    expect(line(r, 'disk.data')).toMatchObject({ status: 'warn', detail: expect.stringMatching(/% used, .* free of .*\(over 1 %, MAILSVC_REPORT_DISK_PERCENT\)$/) });
  }, 120_000);

  it('the timers: where systemd is not running, unknown with that reason', async () => {
    const { report: r } = await doctor();
    const timers = r.checks.filter((c) => c.id.startsWith('timer.'));
    expect(timers.map((c) => c.id)).toEqual(['timer.backup', 'timer.backup-verify', 'timer.stats', 'timer.dkim-rotate', 'timer.tls-check', 'timer.dns-report', 'timer.srs-sync', 'timer.auto-update']);
    if (statSyncSafe('/run/systemd/system')) return skipNotice('the no-systemd case', 'systemd runs here');
    for (const c of timers) expect(c).toMatchObject({ status: 'unknown', detail: 'systemd is not running here (no /run/systemd/system)' });
  }, 120_000);

  it.skipIf(noPostfix !== null)('drift: a limit that differs from what Postfix runs with is fail, naming it, with "limits apply"', async () => {
    const { report: r } = await doctor();
    // The queue Postfix runs with Postfix's own message_size_limit (10240000); mailsvc's default is 50 MiB.
    expect(line(r, 'config.drift')).toMatchObject({ status: 'fail', fix: 'run mailsvc limits apply (it renders, checks and reloads the daemons)' });
    expect(line(r, 'config.drift')?.detail).toMatch(/message-size-limit 52428800, in force 10240000 \(postfix/);
  }, 120_000);

  it('the last backup and its verify: none is fail; a backup not verified is warn; a failed verify is fail', async () => {
    const b = backupEnv(`sqlite://${join(mkdtempSync(join(tmpdir(), 'mailsvc-doctor-db-')), 'mailsvc.db')}`, { MAILSVC_DOCTOR_TLS_PORTS: 'off', MAILSVC_POLICY_LISTEN: 'off', MAILSVC_MAIL_AUTH_SOCKET: 'off', MAILSVC_RSPAMD_CONTROLLER_URL: closed });
    try {
      makeMailStorage(b.mail, 1, 3);
      expect((await b.cli(['db', 'migrate'])).code).toBe(0);
      const run = async () => JSON.parse((await b.cli(['doctor', '--json'])).stdout) as DoctorReport;
      expect(line(await run(), 'backup.last')).toMatchObject({ status: 'fail', detail: 'no backup yet' });
      const made = await b.cli(['backup', 'run', '--full', '--json']);
      expect(made.code, made.stderr).toBe(0);
      const backup = JSON.parse(made.stdout) as { id: string; path: string };
      let r = await run();
      expect(line(r, 'backup.last')).toMatchObject({ status: 'ok', detail: expect.stringContaining(`backup ${backup.id}, completed `) });
      expect(line(r, 'backup.verify')).toMatchObject({ status: 'warn', detail: `backup ${backup.id} is not verified yet`, fix: expect.stringMatching(/mailsvc backup verify/) });
      // One byte of the mail archive flipped: the verify fails, and the doctor says so.
      const archive = join(backup.path, readdirSync(backup.path).find((n) => n.startsWith('mail.tar')) ?? '');
      const fd = openSync(archive, 'r+');
      const at = Math.floor(statSync(archive).size / 2);
      const byte = Buffer.alloc(1);
      readSync(fd, byte, 0, 1, at);
      byte[0] = (byte[0] ?? 0) ^ 0x01;
      writeSync(fd, byte, 0, 1, at);
      closeSync(fd);
      expect((await b.cli(['backup', 'verify', '--json'])).code).toBe(1);
      r = await run();
      expect(line(r, 'backup.verify')).toMatchObject({ status: 'fail', detail: expect.stringMatching(new RegExp(`^the verify of backup ${backup.id} failed at `)), fix: expect.stringMatching(/backup show/) });
    } finally {
      rmSync(b.dir, { recursive: true, force: true });
    }
  }, 240_000);

  it('a database that does not answer: the database line fails, the checks that need it are unknown, and the doctor still answers', async () => {
    const { code, report: r } = await doctor({ MAILSVC_DATABASE_URL: `postgres://nobody@127.0.0.1:${await freePort()}/none` });
    expect(line(r, 'daemon.database')).toMatchObject({ status: 'fail', fix: expect.stringMatching(/MAILSVC_DATABASE_URL/) });
    expect(line(r, 'database.schema')?.status).toBe('unknown');
    expect(line(r, 'clock')).toMatchObject({ status: 'unknown', detail: expect.stringMatching(/^could not be checked: /) });
    expect(code).toBe(1);
  }, 120_000);
});

function statSyncSafe(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
