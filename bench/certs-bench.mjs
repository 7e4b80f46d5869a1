// Certificates benchmark (part of npm run bench; alone: npm run build && npx tsc -p tsconfig.bench.json && node bench/certs-bench.mjs).
//
// Debian's pebble (the ACME test CA) and a real knot for its DNS, two node:tls servers that serve the
// deployed files as a daemon does after a reload. Reported:
//   1. issue + deploy + on-the-wire proof of one certificate (HTTP-01 by mailsvc's own responder),
//      median and worst of ISSUES runs;
//   2. the daily renewal check of 50 certificates with nothing to renew (every certificate's
//      decision, its ARI asked of the CA where it offers it), median of CHECKS runs; target under 1 s.
// Without pebble or knot it prints a notice and exits 0. Exit 1 only when the bench itself failed.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createSecureContext, createServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { knotUnavailable, startKnot } from '../var/bench-build/test/helpers/knot.js';
import { freePort } from '../var/bench-build/test/helpers/mail-daemons.js';
import { pebbleUnavailable, startPebble } from '../var/bench-build/test/helpers/pebble.js';
import { makeTestCa } from '../var/bench-build/test/helpers/test-ca.js';
import { openDnsModules } from '../var/bench-build/test/helpers/dns-modules.js';
import { createCertsModule } from '../var/bench-build/src/modules/certs/index.js';

const ISSUES = Number(process.env.CERTS_BENCH_ISSUES ?? 3);
const CHECKS = Number(process.env.CERTS_BENCH_CHECKS ?? 5);
const HOST = 'mail.example.test';
const log = (s) => process.stderr.write(`${s}\n`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const why = pebbleUnavailable() ?? knotUnavailable();
if (why) {
  log(`[skip] certificates bench: ${why}`);
  process.exit(0);
}

const parts = [];
const stopAll = async () => {
  for (const stop of parts.reverse()) await stop().catch(() => undefined);
};
try {
  const knot = await startKnot({ 'example.test': ['mail A 127.0.0.1'] });
  parts.push(() => knot.stop());
  const pebble = await startPebble({ dnsServer: knot.address });
  parts.push(() => pebble.stop());
  const work = mkdtempSync(join(tmpdir(), 'mailsvc-certs-bench-'));
  parts.push(async () => rmSync(work, { recursive: true, force: true }));
  const placeholder = makeTestCa([HOST]);
  parts.push(async () => placeholder.cleanup());
  const certsDir = join(work, 'live');
  const ports = [];
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const ctx = () => {
      const [c, k] = [join(certsDir, 'mail', 'fullchain.pem'), join(certsDir, 'mail', 'privkey.pem')];
      return existsSync(c) && existsSync(k) ? createSecureContext({ cert: readFileSync(c), key: readFileSync(k) }) : createSecureContext({ cert: placeholder.cert, key: placeholder.key });
    };
    const server = createServer({ cert: placeholder.cert, key: placeholder.key, SNICallback: (_n, cb) => cb(null, ctx()) }, (s) => s.end());
    await new Promise((r) => server.listen(port, '127.0.0.1', r));
    parts.push(async () => server.close());
    ports.push(port);
  }
  const m = await openDnsModules({
    MAILSVC_DATA_DIR: work,
    MAILSVC_MAIL_HOSTNAME: HOST,
    MAILSVC_ACME_DIRECTORY_URL: pebble.directoryUrl,
    MAILSVC_ACME_CA_FILE: pebble.caFile,
    MAILSVC_ACME_HTTP_ADDRESS: '127.0.0.1',
    MAILSVC_ACME_HTTP_PORT: String(pebble.httpPort),
    MAILSVC_CERTS_DEPLOY: 'files',
    MAILSVC_CERTS_DIR: certsDir,
    MAILSVC_DOCTOR_TLS_HOST: '127.0.0.1',
    MAILSVC_DOCTOR_TLS_PORTS: `imaps:${ports[0]},https:${ports[1]}`,
  });
  parts.push(() => m.close());
  const certs = createCertsModule(m.infra, { activeDomains: () => m.domains.service.activeNames() }).service;

  const issue = [];
  for (let i = 0; i < ISSUES; i++) {
    const t0 = performance.now();
    const c = await certs.issue('mail', { newKey: i > 0 });
    issue.push(performance.now() - t0);
    if (!c.proof?.ok) throw new Error('the certificate was not proven');
  }

  // 49 more certificates like the first (the same chain: nothing due), then the daily check.
  const row = await m.infra.db.selectFrom('certificates').selectAll().where('name', '=', 'mail').executeTakeFirstOrThrow();
  for (let i = 1; i < 50; i++) await m.infra.db.insertInto('certificates').values({ ...row, name: `bench-${i}` }).execute();
  const check = [];
  for (let i = 0; i < CHECKS; i++) {
    const t0 = performance.now();
    const out = await certs.renew();
    check.push(performance.now() - t0);
    if (out.length !== 50 || out.some((o) => o.action !== 'skipped')) throw new Error(`the check did something: ${out.map((o) => o.action).join(',')}`);
  }
  const ms = (x) => `${Math.round(x)} ms`;
  process.stdout.write(
    [
      '',
      'Certificates (pebble, knot, two TLS ports proven)',
      `  issue + deploy + on-the-wire proof of one certificate: median ${ms(median(issue))}, worst ${ms(Math.max(...issue))} (${ISSUES} runs)`,
      `  daily renewal check, 50 certificates, nothing due:     median ${ms(median(check))}, worst ${ms(Math.max(...check))} (${CHECKS} runs; target < 1 s: ${median(check) < 1000 ? 'PASS' : 'MISS'})`,
      '',
    ].join('\n'),
  );
} catch (err) {
  log(`certificates bench failed: ${err instanceof Error ? err.stack : String(err)}`);
  process.exitCode = 1;
} finally {
  await stopAll();
}
