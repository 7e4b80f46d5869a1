// Certificate benchmark (part of npm run bench; alone: npm run build && npx tsc -p tsconfig.bench.json && node bench/tls-bench.mjs).
//
// "The daily renewal check of 50 certificates with nothing to renew": real Postfix (25/587 STARTTLS,
// 465), Dovecot (143/110 STARTTLS, 993, 995) and nginx (443) on 127.0.0.1 serving a certificate made for
// the run; one check = the served-expiry check (mailsvc tls check: every port read once, all at once,
// kept in the database) plus the due date (two thirds of the lifetime) of 50 stored certificates, none
// due. Runs REPEAT times; reported: median and worst wall time, ports read per check (target: each
// port once), certificates due (0). Target: median under 1 s. MISS when over; exit 1 only when the
// bench itself failed.
import { execFileSync } from 'node:child_process';
import { X509Certificate, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { makeTestCa } from '../var/bench-build/test/helpers/test-ca.js';
import { startTlsDaemons, tlsDaemonsUnavailable } from '../var/bench-build/test/helpers/tls-daemons.js';
import { loadSettings } from '../var/bench-build/src/config/settings.js';
import { createDb } from '../var/bench-build/src/db/database.js';
import { migrateToLatest } from '../var/bench-build/src/app/schema.js';
import { createInfra } from '../var/bench-build/src/infra/infra.js';
import { createTlsModule } from '../var/bench-build/src/modules/tls/index.js';

const REPEAT = Number(process.env.TLS_BENCH_REPEAT ?? 20);
const STORED = 50;
const HOST = 'mail.bench.test';
const log = (s) => process.stderr.write(`${s}\n`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const why = tlsDaemonsUnavailable();
if (why) {
  log(`tls-bench: skipped (${why})`);
  process.exit(0);
}

const parts = [];
const stopAll = async () => {
  for (const stop of parts.reverse()) await stop().catch(() => undefined);
};
try {
  const ca = makeTestCa([HOST]);
  parts.push(async () => ca.cleanup());
  const daemons = await startTlsDaemons({ chain: ca.chain, key: join(ca.dir, 'server.key') }, HOST);
  parts.push(() => daemons.stop());

  // 50 stored certificates (PEM, as a store keeps them), each 90 days long and issued today: none due.
  const store = mkdtempSync(join(tmpdir(), 'mailsvc-tls-bench-'));
  parts.push(async () => rmSync(store, { recursive: true, force: true }));
  const ssl = (...args) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  ssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(store, 'k.pem'), '-out', join(store, 'ca.pem'), '-days', '90', '-subj', '/CN=bench CA');
  const stored = [];
  for (let i = 0; i < STORED; i++) {
    const f = join(store, `c${i}.pem`);
    ssl('req', '-new', '-key', join(store, 'k.pem'), '-subj', `/CN=host${i}.bench.test`, '-out', `${f}.csr`);
    ssl('x509', '-req', '-in', `${f}.csr`, '-CA', join(store, 'ca.pem'), '-CAkey', join(store, 'k.pem'), '-set_serial', String(1000 + i), '-days', '90', '-out', f);
    stored.push(readFileSync(f, 'utf8'));
  }
  writeFileSync(join(store, 'none.conf'), '');
  const settings = loadSettings({
    MAILSVC_DATA_DIR: store,
    MAILSVC_CONFIG_FILE: join(store, 'none.conf'),
    MAILSVC_SECRET_KEY: randomBytes(32).toString('base64'),
    MAILSVC_HELPER: 'direct',
    MAILSVC_LOG_LEVEL: 'silent',
    MAILSVC_DOCTOR_TLS_PORTS: daemons.portList,
    MAILSVC_DOCTOR_TLS_NAME: HOST,
  }, store);
  const infra = createInfra(settings, { createKeyFile: true, openDb: createDb });
  parts.push(() => infra.close());
  await migrateToLatest(infra.db);
  const tls = createTlsModule(infra);

  /** One daily check: every port read (in parallel, each once) and kept; each stored certificate's due date. */
  const daily = async () => {
    const served = await tls.service.check();
    const now = Date.now();
    const due = stored.filter((pem) => {
      const c = new X509Certificate(pem);
      const from = Date.parse(c.validFrom);
      return now >= from + ((Date.parse(c.validTo) - from) * 2) / 3;
    }).length;
    return { served, due };
  };
  await daily(); // warm-up: loads the TLS stack
  const times = [];
  let last;
  for (let i = 0; i < REPEAT; i++) {
    const t = performance.now();
    last = await daily();
    times.push(performance.now() - t);
    if (!last.served.ok) throw new Error(`a port is not well: ${JSON.stringify(last.served.ports.filter((p) => p.problem))}`);
  }
  const med = median(times);
  const ports = last.served.ports.length;
  const line = (ok) => (ok ? 'ok' : 'MISS');
  log(`tls-bench: daily renewal check of ${STORED} certificates with nothing to renew, ${REPEAT} runs, against Postfix + Dovecot + nginx on 127.0.0.1`);
  log(`  ports read per check: ${ports} (configured: ${daemons.portList.split(',').length}; each once, in parallel) ${line(ports === daemons.portList.split(',').length)}`);
  log(`  stored certificates due for renewal: ${last.due} of ${STORED} (expected 0) ${line(last.due === 0)}`);
  log(`  wall time: median ${med.toFixed(1)} ms, worst ${Math.max(...times).toFixed(1)} ms (target median < 1000 ms) ${line(med < 1000)}`);
  await stopAll();
} catch (err) {
  log(`tls-bench failed: ${err instanceof Error ? err.stack : String(err)}`);
  await stopAll();
  process.exit(1);
}
