import { spawn, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer as createTlsServer, createSecureContext } from 'node:tls';
import type { Server as TlsServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knotUnavailable, startKnot } from '../../../test/helpers/knot.js';
import type { Knot } from '../../../test/helpers/knot.js';
import { findProgram, freePort } from '../../../test/helpers/mail-daemons.js';
import { pebbleUnavailable, startPebble } from '../../../test/helpers/pebble.js';
import type { Pebble } from '../../../test/helpers/pebble.js';
import { REPO_ROOT } from '../../../test/helpers/cli.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { makeTestCa } from '../../../test/helpers/test-ca.js';
import type { TestCa } from '../../../test/helpers/test-ca.js';
import { openDnsModules } from '../../../test/helpers/dns-modules.js';
import type { DnsTestModules } from '../../../test/helpers/dns-modules.js';
import { AppError } from '../../shared/errors.js';
import { createCertsModule } from './index.js';
import type { CertService } from './cert.service.js';

/**
 * HTTP-01 through a webroot that Debian's nginx serves (MAILSVC_ACME_WEBROOT):
 * nginx runs from a temp configuration holding the port-80 server block of
 * the shipped deploy/nginx/mailsvc.conf (its ACME location's root pointed at
 * a temp webroot), listening on the port pebble validates HTTP-01 on; pebble
 * finds the name through a real knot. Without the ACME location (nginx
 * answers 404) the issuance fails and the previous certificate stays.
 */
const why = (findProgram('nginx') === null ? 'missing nginx (Debian package nginx)' : null) ?? pebbleUnavailable() ?? knotUnavailable();
if (why) skipNotice('nginx, pebble and knot', why);

const D = 'example.test';
const MAIL = `mail.${D}`;
/** One key for every instance over the test's database: each opens the sealed account and certificate keys. */
const SECRET = randomBytes(32).toString('base64');
const ACME_LOCATION = 'location /.well-known/acme-challenge/ { root /var/www/html; }';

/** The port-80 server block of the shipped nginx configuration: what an administrator installs. */
function shippedPort80Block(): string {
  const conf = readFileSync(join(REPO_ROOT, 'deploy/nginx/mailsvc.conf'), 'utf8');
  const m = /^server \{\n(?:(?!^\}).*\n)*?\}$/m.exec(conf);
  if (!m || !m[0].includes('listen 80;')) throw new Error('deploy/nginx/mailsvc.conf has no port-80 server block first');
  return m[0];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const alive = (pid: number): boolean => {
  // Never 0 or negative: kill(0) would signal this whole process group.
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** GET http://127.0.0.1:<port><path> with a Host header: status and body (0 when nothing answers). */
function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { host: MAIL }, timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', () => resolve({ status: 0, body: '' })).on('timeout', () => req.destroy());
    req.end();
  });
}

describe.skipIf(why !== null)('HTTP-01 through a webroot served by nginx', () => {
  let knot: Knot;
  let pebble: Pebble;
  let placeholder: TestCa;
  let work: string;
  let webroot: string;
  let certsDir: string;
  let nginxDir: string;
  let tlsServer: TlsServer;
  let tlsPort: number;
  const opened: DnsTestModules[] = [];
  const challengeDir = () => join(webroot, '.well-known', 'acme-challenge');
  const nginxPid = () => Number(readFileSync(join(nginxDir, 'nginx.pid'), 'utf8').trim());

  /** nginx.conf around `server` (the rendered port-80 block, or one without the ACME location). */
  function writeNginxConf(server: string): string {
    const conf = join(nginxDir, 'nginx.conf');
    writeFileSync(conf, [
      `pid ${nginxDir}/nginx.pid;`, `error_log ${nginxDir}/error.log;`, 'worker_processes 1;', 'events { worker_connections 64; }',
      'http {',
      `  access_log ${nginxDir}/access.log;`,
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((k) => `  ${k}_temp_path ${nginxDir}/tmp;`),
      server.replace(/^/gm, '  '),
      '}', '',
    ].join('\n'));
    return conf;
  }

  /** The shipped block, on pebble's HTTP-01 port, its ACME root the temp webroot. */
  function withAcmeLocation(): string {
    const block = shippedPort80Block();
    expect(block).toContain(ACME_LOCATION);
    return block
      .replace('    listen 80;\n', `    listen 127.0.0.1:${pebble.httpPort};\n`)
      .replace('    listen [::]:80;\n', '')
      .replace('root /var/www/html;', `root ${webroot};`);
  }

  /** The same block with the ACME location left out, and nothing but 404 answered: a host whose nginx lacks the snippet. */
  function withoutAcmeLocation(): string {
    return `server {\n    listen 127.0.0.1:${pebble.httpPort};\n    server_name ${MAIL};\n    location / { return 404; }\n}`;
  }

  /** (Re)configures nginx and waits until it answers as the configuration says (a probe file: 200 with it, 404 without). */
  async function serve(server: string, probeStatus: 200 | 404): Promise<void> {
    const conf = writeNginxConf(server);
    execFileSync(findProgram('nginx') ?? 'nginx', ['-t', '-c', conf], { stdio: 'pipe' });
    if (existsSync(join(nginxDir, 'nginx.pid')) && alive(nginxPid())) {
      execFileSync(findProgram('nginx') ?? 'nginx', ['-c', conf, '-s', 'reload'], { stdio: 'pipe' });
    } else {
      spawn('setsid', [findProgram('nginx') ?? 'nginx', '-c', conf, '-g', 'daemon off;'], { stdio: 'ignore', detached: true }).unref();
    }
    mkdirSync(challengeDir(), { recursive: true, mode: 0o755 });
    writeFileSync(join(challengeDir(), 'probe'), 'probe\n', { mode: 0o644 });
    try {
      await expect.poll(async () => (await get(pebble.httpPort, '/.well-known/acme-challenge/probe')).status, { timeout: 20_000, interval: 100 }).toBe(probeStatus);
    } finally {
      rmSync(join(challengeDir(), 'probe'), { force: true });
    }
  }

  async function certs(): Promise<CertService> {
    const m = await openDnsModules(
      {
        MAILSVC_SECRET_KEY: SECRET,
        MAILSVC_MAIL_HOSTNAME: MAIL,
        MAILSVC_ACME_DIRECTORY_URL: pebble.directoryUrl,
        MAILSVC_ACME_CA_FILE: pebble.caFile,
        MAILSVC_ACME_WEBROOT: webroot,
        MAILSVC_CERTS_DEPLOY: 'files',
        MAILSVC_CERTS_DIR: certsDir,
        MAILSVC_DOCTOR_TLS_HOST: '127.0.0.1',
        MAILSVC_DOCTOR_TLS_PORTS: `https:${tlsPort}`,
      },
      {},
      { databaseUrl: `sqlite://${join(work, 'mailsvc.db')}` },
    );
    opened.push(m);
    return createCertsModule(m.infra, { activeDomains: () => m.domains.service.activeNames() }).service;
  }

  beforeAll(async () => {
    knot = await startKnot({ [D]: ['mail A 127.0.0.1'] });
    pebble = await startPebble({ dnsServer: knot.address });
    placeholder = makeTestCa([MAIL]);
    work = mkdtempSync(join(tmpdir(), 'mailsvc-webroot-'));
    // nginx's workers (nobody) read the answers: the webroot and its parent must be searchable.
    chmodSync(work, 0o755);
    webroot = join(work, 'www');
    mkdirSync(webroot, { mode: 0o755 });
    certsDir = join(work, 'live');
    nginxDir = join(work, 'nginx');
    mkdirSync(join(nginxDir, 'tmp'), { recursive: true });
    // The HTTPS port the proof reads: serves the deployed files when they are there (as a daemon after a reload).
    tlsPort = await freePort();
    const context = () => {
      const [chain, key] = [join(certsDir, 'mail', 'fullchain.pem'), join(certsDir, 'mail', 'privkey.pem')];
      return existsSync(chain) && existsSync(key) ? createSecureContext({ cert: readFileSync(chain), key: readFileSync(key) }) : createSecureContext({ cert: placeholder.cert, key: placeholder.key });
    };
    tlsServer = createTlsServer({ SNICallback: (_n, cb) => cb(null, context()), cert: placeholder.cert, key: placeholder.key }, (s) => s.end());
    await new Promise<void>((r) => tlsServer.listen(tlsPort, '127.0.0.1', () => r()));
  }, 120_000);

  afterAll(async () => {
    for (const m of opened) await m.close();
    tlsServer?.close();
    const pid = nginxDir && existsSync(join(nginxDir, 'nginx.pid')) ? nginxPid() : 0;
    if (alive(pid)) {
      try {
        process.kill(pid, 'SIGQUIT');
      } catch {
        // already gone
      }
      for (let i = 0; i < 100 && alive(pid); i++) await sleep(100);
    }
    await pebble?.stop();
    await knot?.stop();
    placeholder?.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('with the shipped ACME location nginx serves the answer: pebble validates, the certificate is issued, and the token file is gone afterwards', async () => {
    await serve(withAcmeLocation(), 200);
    const svc = await certs();
    const c = await svc.issue('mail');
    expect(c).toMatchObject({ name: 'mail', names: [MAIL], state: 'valid', failures: 0, last_error: null, proof: { ok: true } });
    // nginx answered pebble's request for the token from the webroot...
    const log = readFileSync(join(nginxDir, 'access.log'), 'utf8');
    const served = [...log.matchAll(/"GET \/\.well-known\/acme-challenge\/([A-Za-z0-9_-]+) HTTP\/1\.[01]" 200 /g)].map((m) => m[1] as string).filter((t) => t !== 'probe');
    expect(served.length, log).toBeGreaterThan(0);
    // ...and the answer file is gone.
    for (const token of served) expect(existsSync(join(challengeDir(), token))).toBe(false);
    expect(readdirSync(challengeDir())).toEqual([]);
  }, 120_000);

  it('without the ACME location (nginx answers 404) the issuance fails with a clear error, the previous certificate stays, no answer file is left', async () => {
    const svc = await certs();
    const before = await svc.show('mail');
    expect(before.state).toBe('valid');
    await serve(withoutAcmeLocation(), 404);
    const err: unknown = await svc.issue('mail').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('upstream');
    expect((err as AppError).detail).toMatch(/the CA could not validate mail\.example\.test by http-01: .*404.*; check that http:\/\/mail\.example\.test\/\.well-known\/acme-challenge\/ reaches this host/);
    const after = await svc.show('mail');
    expect(after).toMatchObject({ serial: before.serial, sha256: before.sha256, state: 'valid', failures: 1, last_error: expect.stringMatching(/could not validate/) });
    expect(readFileSync(join(certsDir, 'mail', 'fullchain.pem'), 'utf8')).toBe(before.chain_pem);
    expect(readdirSync(challengeDir())).toEqual([]);
    // nginx was asked, and said 404.
    expect(readFileSync(join(nginxDir, 'access.log'), 'utf8')).toMatch(/"GET \/\.well-known\/acme-challenge\/(?!probe)[A-Za-z0-9_-]+ HTTP\/1\.[01]" 404 /);
  }, 120_000);
});
