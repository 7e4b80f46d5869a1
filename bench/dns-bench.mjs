// Deliverability benchmark (part of npm run bench; alone: npm run build && npx tsc -p tsconfig.bench.json && node bench/dns-bench.mjs).
//
// One domain set up as the README's walk-through leaves it: a real knot serving its zone (every record
// of the DNS plan) and the reverse zone, an HTTPS server with the MTA-STS policy and /health, a real
// Postfix offering STARTTLS, certificates from a CA made for the run. The full deliverability check
// (every check, in parallel) runs REPEAT times; reported: median and worst wall time, the DNS queries
// one check makes, the number of checks, and the distinct questions (target: queries = distinct
// questions, i.e. each asked once; median under 1 s). Exit 1 only when the bench itself failed.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startKnot } from '../var/bench-build/test/helpers/knot.js';
import { makeTestCa } from '../var/bench-build/test/helpers/test-ca.js';
import { startMtaStsServer } from '../var/bench-build/test/helpers/mta-sts-server.js';
import { startTlsPostfix } from '../var/bench-build/test/helpers/postfix-tls.js';
import { openDnsModules } from '../var/bench-build/test/helpers/dns-modules.js';
import { splitTxt } from '../var/bench-build/src/modules/dns/txt.js';
import { spkiSha256OfDer } from '../var/bench-build/src/modules/dns/dane-spki.js';
import { X509Certificate } from 'node:crypto';

const REPEAT = Number(process.env.DNS_BENCH_REPEAT ?? 20);
const D = 'example.test';
const HOST = 'mail.example.test';
const IP = '127.0.0.1';
// The distinct questions of one full check with one DKIM key and a public IP: MX, A and AAAA of the
// mail host, TXT of the domain, _dmarc, the selector, _mta-sts, _smtp._tls, A and AAAA of mta-sts, the PTR;
// and TLSA of _25._tcp.<mail host> twice, to different servers for different answers: to each authoritative
// server (with DO, whether it signs) and to the resolver (whether it validates: the AD flag).
const DISTINCT_QUESTIONS = 13;
const log = (s) => process.stderr.write(`${s}\n`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const parts = [];
const stopAll = async () => {
  for (const stop of parts.reverse()) await stop().catch(() => undefined);
};
try {
  // The zone is DNSSEC-signed and port 25's key is in a TLSA record, as on a host with DANE: the DANE and DNSSEC checks pass too.
  const knot = await startKnot({ [D]: [], '0.0.127.in-addr.arpa': [`1 PTR ${HOST}.`] }, { signed: [D] });
  parts.push(() => knot.stop());
  const ca = makeTestCa([HOST, `mta-sts.${D}`]);
  parts.push(async () => ca.cleanup());
  const smtp = await startTlsPostfix(ca.chain, ca.key, HOST);
  parts.push(() => smtp.stop());
  const web = await startMtaStsServer({ cert: ca.cert, key: ca.key }, D, HOST, '');
  parts.push(() => web.close());
  const dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-dns-bench-'));
  parts.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  const m = await openDnsModules(
    {
      MAILSVC_DATA_DIR: dataDir,
      MAILSVC_DNS_RESOLVER: knot.address,
      MAILSVC_DNS_AUTHORITATIVE: knot.address,
      MAILSVC_DELIVERABILITY_HTTPS_PORT: String(web.port),
      MAILSVC_DELIVERABILITY_SMTP_PORT: String(smtp.port),
      MAILSVC_OUTBOUND_ALLOW_HOSTS: `mta-sts.${D}:${web.port},${HOST}:${web.port}`,
      MAILSVC_RSPAMD_LOCAL_DIR: join(dataDir, 'no-rspamd/local.d'),
    },
    { ca: [ca.ca] },
  );
  parts.push(() => m.close());
  await m.domains.service.createWithDkim(D);
  const plan = await m.dns.plan.plan(D, HOST, IP);
  web.state.policy = plan.mta_sts_policy;
  await knot.update(
    D,
    plan.records
      .filter((r) => r.where === 'zone' && r.value !== null)
      .map((r) => (r.type === 'TXT' ? `update add ${r.name}. 60 TXT ${splitTxt(r.value).map((s) => `"${s}"`).join(' ')}` : `update add ${r.name}. 60 ${r.type} ${r.value}`))
      .concat(plan.records.some((r) => r.type === 'TLSA') ? [] : [`update add _25._tcp.${HOST}. 60 TLSA 3 1 1 ${spkiSha256OfDer(new X509Certificate(ca.cert).raw)}`]),
  );

  await m.dns.deliverability.check(D, HOST, IP); // warm-up: loads undici, the TLS stack
  const times = [];
  let last;
  for (let i = 0; i < REPEAT; i++) {
    const t = performance.now();
    last = await m.dns.deliverability.check(D, HOST, IP);
    times.push(performance.now() - t);
    if (!last.ok) throw new Error(`the check is not green: ${JSON.stringify(last.checks.filter((c) => c.status !== 'pass'))}`);
  }
  const med = median(times);
  const worst = Math.max(...times);
  const checks = last.checks.length;
  const line = (ok) => (ok ? 'ok' : 'MISS');
  log(`dns-bench: full deliverability check of one domain, ${REPEAT} runs against knot + HTTPS + Postfix STARTTLS on 127.0.0.1`);
  log(`  checks: ${checks} (in parallel)`);
  log(`  DNS queries per check run: ${last.dns_queries}; distinct questions: ${DISTINCT_QUESTIONS}; ratio ${(last.dns_queries / DISTINCT_QUESTIONS).toFixed(2)} (target 1.00) ${line(last.dns_queries === DISTINCT_QUESTIONS)}`);
  log(`  DNS queries per check: ${(last.dns_queries / checks).toFixed(2)}`);
  log(`  wall time: median ${med.toFixed(1)} ms, worst ${worst.toFixed(1)} ms (target median < 1000 ms) ${line(med < 1000)}`);
  await stopAll();
} catch (err) {
  log(`dns-bench failed: ${err instanceof Error ? err.stack : String(err)}`);
  await stopAll();
  process.exit(1);
}
