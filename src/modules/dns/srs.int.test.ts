import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipNotice } from '../../../test/helpers/services.js';
import { findProgram, freePort } from '../../../test/helpers/mail-daemons.js';
import { openDnsModules } from '../../../test/helpers/dns-modules.js';
import { runCli } from '../../../test/helpers/cli.js';
import type { DnsTestModules } from '../../../test/helpers/dns-modules.js';
import { tcpTableGet } from '../../adapters/postsrsd/postsrsd.js';

/**
 * "sync SRS domains" against a real postsrsd 1.10 in the foreground, started
 * the way Debian's unit does it: its settings file sourced by a shell, the
 * values handed over with -e. The sync goes through the root helper's
 * `srs-domains-apply` (here in this process, MAILSVC_HELPER=direct), which
 * writes the file and restarts postsrsd through the service manager.
 */
const why = findProgram('postsrsd') === null ? 'missing postsrsd (Debian package)' : null;
if (why) skipNotice('postsrsd', why);

describe.skipIf(why !== null)('sync SRS domains with postsrsd, through the helper', () => {
  let dir: string;
  let port: number;
  /** The reverse-map port: a free one of its own (port + 1 could be another test's). */
  let rport: number;
  let m: DnsTestModules;
  const defaults = () => join(dir, 'postsrsd');
  const restarts = () => (existsSync(join(dir, 'manager.log')) ? readFileSync(join(dir, 'manager.log'), 'utf8').trim().split('\n').filter((l) => l.startsWith('restart')).length : 0);
  const manager = () => join(dir, 'manager.sh');

  const waitUp = async () => {
    for (let i = 0; i < 100; i++) {
      if (await tcpTableGet('127.0.0.1', port, 'x@y.example', 500).then(() => true, () => false)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    const log = existsSync(join(dir, 'postsrsd.log')) ? readFileSync(join(dir, 'postsrsd.log'), 'utf8').slice(-2000) : '';
    throw new Error(`postsrsd did not start on 127.0.0.1:${port}/${rport}: ${log}`);
  };
  const stop = () => {
    const pid = existsSync(join(dir, 'pid')) ? Number(readFileSync(join(dir, 'pid'), 'utf8')) : 0;
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // Gone already.
      }
    }
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-srs-'));
    port = await freePort();
    rport = await freePort();
    writeFileSync(join(dir, 'secret'), 'a-test-secret-that-is-long-enough\n', { mode: 0o600 });
    writeFileSync(defaults(), '# Debian defaults for postsrsd\nSRS_DOMAIN=srs.example.net\nSRS_EXCLUDE_DOMAINS=\n', { mode: 0o644 });
    // The service manager the helper runs as `<program> restart postsrsd.service` (MAILSVC_SERVICE_MANAGER):
    // it starts postsrsd the way Debian's unit does, from the settings file sourced by a shell.
    writeFileSync(
      manager(),
      [
        '#!/bin/sh',
        `[ "$2" = postsrsd.service ] || exit 2`,
        `echo "$*" >> '${dir}/manager.log'`,
        `if [ -f '${dir}/pid' ]; then p=$(cat '${dir}/pid'); kill "$p" 2>/dev/null; while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; fi`,
        `setsid sh -c 'set -a; . "${defaults()}"; exec postsrsd -e -4 -l 127.0.0.1 -f ${port} -r ${rport} -s "${join(dir, 'secret')}" -d "$SRS_DOMAIN" -X"$SRS_EXCLUDE_DOMAINS"' </dev/null >>'${dir}/postsrsd.log' 2>&1 &`,
        `echo $! > '${dir}/pid'`,
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    execFileSync(manager(), ['start', 'postsrsd.service']);
    await waitUp();
    m = await openDnsModules(
      { MAILSVC_POSTSRSD_DEFAULTS: defaults(), MAILSVC_POSTSRSD_FORWARD: `127.0.0.1:${port}`, MAILSVC_SERVICE_MANAGER: manager() },
      { activeDomains: () => m.domains.service.activeNames() },
    );
  }, 60_000);

  afterAll(async () => {
    stop();
    await m?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('excludes exactly the active domains, restarts postsrsd, and checks live that local is kept and foreign rewritten', async () => {
    await m.domains.service.create('b.example.org');
    await m.domains.service.create('a.example.org');
    const off = await m.domains.service.create('off.example.org');
    await m.domains.service.setActive(off.id, false);
    // Before the sync, postsrsd rewrites the local domain too.
    expect((await tcpTableGet('127.0.0.1', port, 'me@a.example.org')).code).toBe(200);
    const r = await m.dns.srs.sync();
    expect(r).toMatchObject({ excluded: ['a.example.org', 'b.example.org'], changed: true, restarted: true });
    expect(readFileSync(defaults(), 'utf8')).toBe('# Debian defaults for postsrsd\nSRS_DOMAIN=srs.example.net\nSRS_EXCLUDE_DOMAINS=a.example.org,b.example.org\n');
    expect(r.verified.foreign).toMatch(/^SRS0=.*@srs\.example\.net$/);
    expect((await tcpTableGet('127.0.0.1', port, 'me@b.example.org')).code).not.toBe(200);
    expect((await tcpTableGet('127.0.0.1', port, 'me@off.example.org')).code).toBe(200);
    expect(restarts()).toBe(1);
  });

  it('writes nothing and restarts nothing when the list did not change', async () => {
    const r = await m.dns.srs.sync();
    expect(r).toMatchObject({ changed: false, restarted: false });
    expect(restarts()).toBe(1);
  });

  it('a domain added or deleted (mailsvc add domain, domains delete) with MAILSVC_ENABLE_SRS=yes: the excluded domains follow at once; a sync that fails never fails the change, is audited, and the doctor shows the drift', async () => {
    const data = mkdtempSync(join(tmpdir(), 'mailsvc-srs-cli-'));
    const key = randomBytes(32).toString('base64');
    const env = (extra: Record<string, string> = {}) => ({
      MAILSVC_DATA_DIR: data, MAILSVC_HELPER: 'direct', MAILSVC_ENABLE_SRS: 'yes', MAILSVC_POSTSRSD_DEFAULTS: defaults(), MAILSVC_POSTSRSD_FORWARD: `127.0.0.1:${port}`,
      MAILSVC_SERVICE_MANAGER: manager(), MAILSVC_LOG_LEVEL: 'silent', MAILSVC_RSPAMD_LOCAL_DIR: join(data, 'no-rspamd/local.d'), MAILSVC_SECRET_KEY: key, ...extra,
    });
    const cli = async (args: string[], extra: Record<string, string> = {}) => {
      const r = await runCli(args, { env: env(extra), timeoutMs: 90_000 });
      return { ...r, ok: r.code === 0 };
    };
    const excluded = () => /^SRS_EXCLUDE_DOMAINS=(.*)$/m.exec(readFileSync(defaults(), 'utf8'))?.[1];
    const rewrites = async (domain: string) => (await tcpTableGet('127.0.0.1', port, `me@${domain}`)).code === 200;
    try {
      expect((await cli(['db', 'migrate'])).ok).toBe(true);
      const before = restarts();
      const added = await cli(['add', 'domain', 'new.example.org']);
      expect(added.code, added.stderr).toBe(0);
      // No timer ran: the domain's own senders keep their address as soon as the command returns.
      expect(excluded()).toBe('new.example.org');
      expect(restarts()).toBe(before + 1);
      expect(await rewrites('new.example.org')).toBe(false);

      // postsrsd cannot be restarted: the domain is added all the same, the file is left as it was, the audit log says why.
      const late = await cli(['add', 'domain', 'late.example.org'], { MAILSVC_SERVICE_MANAGER: '/bin/false' });
      expect(late.code, late.stderr).toBe(0);
      expect((await cli(['domains', 'show', 'late.example.org', '--json'])).ok).toBe(true);
      expect(excluded()).toBe('new.example.org');
      expect(await rewrites('late.example.org')).toBe(true);
      const audit = JSON.parse((await cli(['audit', 'list', '--action', 'srs.follow_failed', '--json'])).stdout) as Array<{ action: string; target: string; result: string; summary: { change: string; error: string } }>;
      expect(audit).toEqual([expect.objectContaining({ action: 'srs.follow_failed', target: 'late.example.org', result: 'failed', summary: { change: 'created', error: expect.stringMatching(/sync SRS domains/) } })]);
      const doctor = JSON.parse((await cli(['doctor', '--json'], { MAILSVC_DOCTOR_TLS_PORTS: 'off', MAILSVC_POLICY_LISTEN: 'off', MAILSVC_MAIL_AUTH_SOCKET: 'off' })).stdout) as { checks: Array<{ id: string; status: string; detail: string; fix: string | null }> };
      expect(doctor.checks.find((c) => c.id === 'srs.domains')).toMatchObject({ status: 'fail', detail: expect.stringContaining('late.example.org'), fix: expect.stringMatching(/^run mailsvc dns sync-srs/) });

      // Deleting a domain follows too (and takes the one that lagged along).
      const deleted = await cli(['domains', 'delete', 'new.example.org']);
      expect(deleted.code, deleted.stderr).toBe(0);
      expect(excluded()).toBe('late.example.org');
      expect(await rewrites('new.example.org')).toBe(true);
      expect(await rewrites('late.example.org')).toBe(false);
      const healed = JSON.parse((await cli(['doctor', '--json'], { MAILSVC_DOCTOR_TLS_PORTS: 'off', MAILSVC_POLICY_LISTEN: 'off', MAILSVC_MAIL_AUTH_SOCKET: 'off' })).stdout) as { checks: Array<{ id: string; status: string }> };
      expect(healed.checks.find((c) => c.id === 'srs.domains')).toMatchObject({ status: 'ok' });
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  }, 240_000);
});

describe.skipIf(why !== null)('srs-domains-apply refuses what is not a domain list and writes nothing', () => {
  it('a path, an option, a shell word or a newline is refused; the file is unchanged', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-srs-bad-'));
    const file = join(dir, 'postsrsd');
    writeFileSync(file, 'SRS_DOMAIN=srs.example.net\nSRS_EXCLUDE_DOMAINS=a.example.org\n');
    const m = await openDnsModules({ MAILSVC_POSTSRSD_DEFAULTS: file, MAILSVC_SERVICE_MANAGER: '/bin/false' });
    try {
      for (const bad of ['../etc/passwd', 'a.example.org;reboot', '-x', 'a.example.org,$(id)', 'a.example.org\nSRS_SECRET=/tmp/x', 'A.example.org']) {
        await expect(m.infra.helper.run('srs-domains-apply', [bad])).rejects.toThrow(/domain|control character/i);
      }
      expect(readFileSync(file, 'utf8')).toBe('SRS_DOMAIN=srs.example.net\nSRS_EXCLUDE_DOMAINS=a.example.org\n');
    } finally {
      await m.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
