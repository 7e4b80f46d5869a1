import { spawnSync } from 'node:child_process';
import { X509Certificate, createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { buildCli, runCli } from '../../../test/helpers/cli.js';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { call } from '../../../test/helpers/flows.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { makeTestCa } from '../../../test/helpers/test-ca.js';
import type { TestCa } from '../../../test/helpers/test-ca.js';
import { startTlsDaemons, tlsDaemonsUnavailable } from '../../../test/helpers/tls-daemons.js';
import type { TlsDaemons } from '../../../test/helpers/tls-daemons.js';
import type { DeployReport } from './deployer.js';
import type { CheckReport } from './tls.service.js';
import type { TlsModule } from './index.js';

/**
 * Deploy and prove on the wire against real daemons: Postfix (25/587 with
 * STARTTLS, 465), Dovecot (143/110 with STARTTLS, 993, 995) and nginx (443),
 * each on a free port of 127.0.0.1, serving a first certificate made with
 * openssl. The helper runs in-process (MAILSVC_HELPER=direct) on their
 * configurations; its doveadm ignores `reload`, so Dovecot keeps serving the
 * old certificate after a deploy's reload, as a Dovecot that does not pick
 * one up does: mailsvc must see it on the wire and restart Dovecot.
 */
const HOST = 'mail.tls.test';
const why = tlsDaemonsUnavailable();
if (why) skipNotice('Postfix, Dovecot and nginx serving certificates', why);
const group = spawnSync('getent', ['group', 'ssl-cert']).status === 0 ? 'ssl-cert' : '0';

const leafSha = (ca: TestCa): string => createHash('sha256').update(new X509Certificate(ca.cert).raw).digest('hex');
const KINDS = ['smtp', 'submission', 'smtps', 'imap', 'imaps', 'pop3', 'pop3s', 'https'] as const;

describe.skipIf(why !== null)('tls deploy: the certificate proven on every port of real Postfix, Dovecot and nginx', { timeout: 300_000 }, () => {
  let d: TlsDaemons;
  let db: TestDatabase;
  let t: TestApp;
  let tls: TlsModule;
  let env: Record<string, string>;
  const cas: TestCa[] = [];
  const ca = (days = 90): TestCa => {
    const c = makeTestCa([HOST], { days });
    cas.push(c);
    return c;
  };
  let first: TestCa;
  let second: TestCa;

  /** What each port serves now, read independently of the deployer. */
  const served = async (): Promise<Record<string, string | null>> =>
    Object.fromEntries((await tls.prober.read(KINDS.map((k) => ({ kind: k, port: d.ports[k] })))).map((r) => [r.kind, r.served?.sha256 ?? null]));
  const all = (sha: string): Record<string, string> => Object.fromEntries(KINDS.map((k) => [k, sha]));

  beforeAll(async () => {
    buildCli();
    first = ca();
    d = await startTlsDaemons({ chain: first.chain, key: join(first.dir, 'server.key') }, HOST);
    db = await createTestDatabase('sqlite');
    env = {
      MAILSVC_HELPER: 'direct',
      MAILSVC_MFA_REQUIRED: 'no',
      MAILSVC_DOCTOR_TLS_PORTS: d.portList,
      MAILSVC_DOCTOR_TLS_HOST: '127.0.0.1',
      MAILSVC_DOCTOR_TLS_NAME: HOST,
      MAILSVC_METRICS_TOKEN: 'tls-scrape-token-0123456789abcdef',
      ...d.helperEnv,
      MAILSVC_TLS_GROUP: group,
      // A reload that lands late on a loaded machine is not a stale daemon: the proof gives it 20 s here (5 s by default),
      // in this process and in the CLI's alike.
      MAILSVC_TLS_SETTLE_MS: '20000',
    };
    t = await startTestApp(db.url, env);
    tls = await t.ctx.modules.get('tls');
  }, 180_000);

  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await d?.stop();
    for (const c of cas) c.cleanup();
  });

  it('every port serves the first certificate before any deploy (the set-up is what it claims)', async () => {
    expect(await served()).toEqual(all(leafSha(first)));
  });

  it('a deploy that Dovecot does not pick up on reload: mailsvc sees the old certificate on 143/110/993/995, restarts Dovecot once, and proves every port', async () => {
    second = ca();
    const r = await tls.deployer.deploy({ certName: HOST, chainPem: readFileSync(second.chain, 'utf8'), keyPem: second.key, services: ['smtp', 'submission', 'smtps', 'imaps', 'pop3s', 'https'] });
    expect(r, JSON.stringify(r, null, 2) + d.logs().slice(-3000)).toMatchObject({ ok: true, sha256: leafSha(second) });
    expect(r.ports.map((p) => p.service).sort()).toEqual([...KINDS].sort());
    for (const p of r.ports) {
      expect(p, p.service).toMatchObject({ matches: true, servedSha256: leafSha(second) });
      expect(p.detail).toBe(['imap', 'imaps', 'pop3', 'pop3s'].includes(p.service) ? 'serves the new certificate after a restart of dovecot' : 'serves the new certificate after a reload');
    }
    // Dovecot's reload was sent (and ignored); only Dovecot was restarted, once.
    expect(d.doveadmReloads()).toBeGreaterThanOrEqual(1);
    expect(d.restarts()).toEqual(['restart dovecot.service']);
    expect(await served()).toEqual(all(leafSha(second)));
    // The key: root-owned, 0640, the daemons' group; the chain 0644.
    const key = statSync(join(d.helperEnv.MAILSVC_TLS_DIR ?? '', HOST, `${leafSha(second).slice(0, 16)}.key.pem`));
    expect({ mode: key.mode & 0o777, uid: key.uid }).toEqual({ mode: 0o640, uid: 0 });
    expect(String(key.gid)).toBe(group === '0' ? '0' : spawnSync('getent', ['group', 'ssl-cert'], { encoding: 'utf8' }).stdout.split(':')[2]);
    // The first certificate's files are the administrator's and untouched; the health is fine.
    const health = await call(t, 'GET', '/health/details?components=false', t.basic());
    expect(health.body).toMatchObject({ status: 'ok', tls: { problems: [], last_deploy: { certificate: HOST, ok: true } } });
  });

  it('a port still stale after the restart: failure, the previous certificate back on every daemon, exit 1, /health/details degraded, the metric', async () => {
    d.setDovecotRestartIgnored(true);
    onTestFinished(() => d.setDovecotRestartIgnored(false));
    const third = ca();
    const before = d.restarts().length;
    const out = await runCli(['tls', 'deploy', '--name', HOST, '--chain', third.chain, '--key', join(third.dir, 'server.key'), '--json'], { env: { ...env, MAILSVC_DATABASE_URL: db.url, MAILSVC_DATA_DIR: t.dataDir }, timeoutMs: 180_000 });
    const r = JSON.parse(out.stdout) as DeployReport;
    expect(out.code, out.stderr).toBe(1);
    expect(out.stderr).toMatch(/is not served on (imap|imaps|pop3|pop3s):\d+.* even after a restart; the daemons were pointed back at the previous certificate, which every port serves again/);
    expect(r.ok).toBe(false);
    for (const p of r.ports) expect(p.matches, p.service).toBe(!['imap', 'imaps', 'pop3', 'pop3s'].includes(p.service));
    expect(r.ports.filter((p) => !p.matches).every((p) => p.servedSha256 === leafSha(second) && p.detail === 'still serves the old certificate after a restart of dovecot')).toBe(true);
    // Dovecot was restarted (once); on a loaded machine a reload of Postfix or nginx may still land late and restart it too.
    expect(d.restarts().slice(before).filter((x) => x === 'restart dovecot.service')).toHaveLength(1);
    // Rolled back: Postfix and nginx serve the second certificate again, Dovecot never stopped serving it.
    expect(await served()).toEqual(all(leafSha(second)));
    const health = await call(t, 'GET', '/health/details?components=false', t.basic());
    expect(health.body).toMatchObject({ status: 'degraded', tls: { last_deploy: { ok: false } } });
    expect((health.body as { degraded_by: string[] }).degraded_by).toEqual(expect.arrayContaining(['tls deploy', `tls imaps:${d.ports.imaps}`]));
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${env.MAILSVC_METRICS_TOKEN ?? ''}` } });
    expect(metrics.body).toMatch(/^mailsvc_tls_deploy_failed 1$/m);
    expect(metrics.body).toMatch(new RegExp(`^mailsvc_tls_port_problem\\{service="imaps",port="${d.ports.imaps}"\\} 1$`, 'm'));
    expect(metrics.body).toMatch(new RegExp(`^mailsvc_tls_port_problem\\{service="https",port="${d.ports.https}"\\} 0$`, 'm'));
  });

  it('the served-expiry monitor: a certificate expiring in 5 days on every port is an alarm (exit 1, degraded, days to expiry per port in /metrics)', async () => {
    const soon = ca(5);
    const r = await tls.deployer.deploy({ certName: HOST, chainPem: readFileSync(soon.chain, 'utf8'), keyPem: soon.key, services: ['smtp', 'submission', 'smtps', 'imaps', 'pop3s', 'https'] });
    expect(r.ok, JSON.stringify(r)).toBe(true);
    const out = await runCli(['tls', 'check', '--json'], { env: { ...env, MAILSVC_DATABASE_URL: db.url, MAILSVC_DATA_DIR: t.dataDir }, timeoutMs: 120_000 });
    expect(out.code, out.stderr).toBe(1);
    const report = JSON.parse(out.stdout) as CheckReport;
    expect(report.ports).toHaveLength(KINDS.length);
    for (const p of report.ports) {
      expect(p.served_sha256, p.service).toBe(leafSha(soon));
      expect([4, 5]).toContain(p.days_left);
      expect(p.problem).toMatch(/^the certificate served expires in [45] days/);
    }
    expect(out.stderr).toMatch(/certificate alarm/);
    const health = await call(t, 'GET', '/health/details?components=false', t.basic());
    expect(health.body).toMatchObject({ status: 'degraded' });
    expect((health.body as { degraded_by: string[] }).degraded_by).toEqual(expect.arrayContaining(KINDS.map((k) => `tls ${k}:${d.ports[k]}`)));
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${env.MAILSVC_METRICS_TOKEN ?? ''}` } });
    for (const k of KINDS) {
      const m = new RegExp(`^mailsvc_tls_days_to_expiry\\{service="${k}",port="${d.ports[k]}"\\} ([\\d.]+)$`, 'm').exec(metrics.body);
      expect(m, k).not.toBeNull();
      expect(Number(m?.[1])).toBeGreaterThan(4);
      expect(Number(m?.[1])).toBeLessThanOrEqual(5);
    }
    expect(metrics.body).toMatch(/^mailsvc_tls_deploy_failed 0$/m);
  });

  it('bad input changes nothing: a key of another certificate, an expired one, a bad name are refused before the helper is asked', async () => {
    const other = ca();
    const expired = ca(-1);
    const now = await served();
    const base = { certName: HOST, services: ['https' as const] };
    await expect(tls.deployer.deploy({ ...base, chainPem: readFileSync(other.chain, 'utf8'), keyPem: first.key })).rejects.toMatchObject({ code: 'validation', detail: expect.stringMatching(/does not belong to the leaf/) });
    await expect(tls.deployer.deploy({ ...base, chainPem: readFileSync(expired.chain, 'utf8'), keyPem: expired.key })).rejects.toMatchObject({ code: 'validation', detail: expect.stringMatching(/expired/) });
    await expect(tls.deployer.deploy({ ...base, certName: '../etc', chainPem: readFileSync(other.chain, 'utf8'), keyPem: other.key })).rejects.toMatchObject({ code: 'validation' });
    expect(await served()).toEqual(now);
  });
});
