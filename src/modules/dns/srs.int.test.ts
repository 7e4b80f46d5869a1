import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipNotice } from '../../../test/helpers/services.js';
import { findProgram, freePort } from '../../../test/helpers/mail-daemons.js';
import { openDnsModules } from '../../../test/helpers/dns-modules.js';
import type { DnsTestModules } from '../../../test/helpers/dns-modules.js';
import { tcpTableGet } from '../../adapters/postsrsd/postsrsd.js';

/**
 * "sync SRS domains" against a real postsrsd 1.10 in the foreground, started
 * the way Debian's unit does it: its settings file sourced by a shell, the
 * values handed over with -e. A restart (the helper's restart-postsrsd in
 * production) stops it and starts it again from the file.
 */
const why = findProgram('postsrsd') === null ? 'missing postsrsd (Debian package)' : null;
if (why) skipNotice('postsrsd', why);

describe.skipIf(why !== null)('sync SRS domains with postsrsd', () => {
  let dir: string;
  let port: number;
  let child: ChildProcess | undefined;
  let m: DnsTestModules;
  let restarts = 0;
  const defaults = () => join(dir, 'postsrsd');

  const start = async () => {
    const script = `set -a; . '${defaults()}'; exec postsrsd -e -4 -l 127.0.0.1 -f ${port} -r ${port + 1} -s '${join(dir, 'secret')}' -d "$SRS_DOMAIN" -X"$SRS_EXCLUDE_DOMAINS"`;
    child = spawn('sh', ['-c', script], { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      if (await tcpTableGet('127.0.0.1', port, 'x@y.example', 500).then(() => true, () => false)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('postsrsd did not start');
  };
  const stop = async () => {
    if (child && child.exitCode === null) {
      const c = child;
      c.kill('SIGTERM');
      await new Promise((r) => c.once('exit', r));
    }
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-srs-'));
    port = await freePort();
    writeFileSync(join(dir, 'secret'), 'a-test-secret-that-is-long-enough\n', { mode: 0o600 });
    writeFileSync(defaults(), '# Debian defaults for postsrsd\nSRS_DOMAIN=srs.example.net\nSRS_EXCLUDE_DOMAINS=\n', { mode: 0o644 });
    await start();
    m = await openDnsModules(
      { MAILSVC_POSTSRSD_DEFAULTS: defaults(), MAILSVC_POSTSRSD_FORWARD: `127.0.0.1:${port}` },
      { activeDomains: () => m.domains.service.activeNames(), postsrsdRestarter: { reload: async () => { restarts += 1; await stop(); await start(); } } },
    );
  }, 60_000);

  afterAll(async () => {
    await stop();
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
    expect(restarts).toBe(1);
  });

  it('writes nothing and restarts nothing when the list did not change', async () => {
    const r = await m.dns.srs.sync();
    expect(r).toMatchObject({ changed: false, restarted: false });
    expect(restarts).toBe(1);
  });
});
