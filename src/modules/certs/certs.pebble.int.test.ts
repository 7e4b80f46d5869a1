import { randomBytes, X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createTlsServer, createSecureContext } from 'node:tls';
import type { Server as TlsServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knotUnavailable, startKnot } from '../../../test/helpers/knot.js';
import type { Knot } from '../../../test/helpers/knot.js';
import { freePort } from '../../../test/helpers/mail-daemons.js';
import { httpsGet, pebbleUnavailable, startAcmeProxy, startPebble } from '../../../test/helpers/pebble.js';
import type { AcmeProxy, Pebble } from '../../../test/helpers/pebble.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { makeTestCa } from '../../../test/helpers/test-ca.js';
import type { TestCa } from '../../../test/helpers/test-ca.js';
import { openDnsModules } from '../../../test/helpers/dns-modules.js';
import type { DnsTestModules } from '../../../test/helpers/dns-modules.js';
import { startFakeCloudflare } from '../../../test/helpers/cloudflare-server.js';
import type { FakeCloudflare, FakeRecord } from '../../../test/helpers/cloudflare-server.js';
import { AppError } from '../../shared/errors.js';
import { ariCertId } from './acme.js';
import { createJobsModule } from '../jobs/index.js';
import type { JobRunner, JobUpdate } from '../jobs/index.js';
import { createCertsModule, LocalFileDeployer } from './index.js';
import type { CertificateDeployer, CertsModule } from './index.js';
import type { CertService } from './cert.service.js';

/**
 * The certs module against Debian's pebble (the ACME test CA): HTTP-01 by the
 * own responder, DNS-01 by RFC 2136 + TSIG into a real knot and through the
 * Cloudflare sync (a local HTTPS server speaking Cloudflare API v4 that writes
 * into the same knot), each certificate deployed by the built-in deployer and
 * proven on the wire against node:tls servers that read the deployed files
 * (as a daemon does after a reload); ARI and a 429 through a local ACME proxy
 * in front of pebble (pebble 2.4 has neither).
 */
const why = pebbleUnavailable() ?? knotUnavailable();
if (why) skipNotice('pebble and knot', why);

const D = 'example.test';
const MAIL = `mail.${D}`;
const TSIG = { algorithm: 'hmac-sha256', name: 'acme-key.', secret: randomBytes(32).toString('base64') };
const ZONE = { id: '023e105f4ecef8ad9ca31a8372d0c353', name: D, token: 'cf-test-token-0123456789abcdef' };

/** A TLS server that, like a daemon after a reload, serves the deployed files when they are there (a placeholder before). */
const serving = { name: 'mail' };
async function fileServedTls(dir: string, placeholder: TestCa, opts: { reads: boolean }): Promise<{ port: number; server: TlsServer }> {
  const port = await freePort();
  const context = () => {
    const chain = join(dir, serving.name, 'fullchain.pem');
    const key = join(dir, serving.name, 'privkey.pem');
    return opts.reads && existsSync(chain) && existsSync(key) ? createSecureContext({ cert: readFileSync(chain), key: readFileSync(key) }) : createSecureContext({ cert: placeholder.cert, key: placeholder.key });
  };
  const server = createTlsServer({ SNICallback: (_n, cb) => cb(null, context()), cert: placeholder.cert, key: placeholder.key }, (s) => s.end());
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  return { port, server };
}

describe.skipIf(why !== null)('ACME certificates against pebble', () => {
  let knot: Knot;
  let pebble: Pebble;
  let proxy: AcmeProxy;
  let placeholder: TestCa;
  let cfCa: TestCa;
  let cf: FakeCloudflare;
  let work: string;
  let certsDir: string;
  let imaps: { port: number; server: TlsServer };
  let https: { port: number; server: TlsServer };
  let stale: { port: number; server: TlsServer };
  const secret = randomBytes(32).toString('base64');
  const opened: DnsTestModules[] = [];
  let dbUrl: string;
  let now = Date.now();
  const clock = { now: () => now };

  /** The certs module over the shared database, with these settings. */
  async function certs(env: Record<string, string> = {}, deployer?: CertificateDeployer): Promise<CertService> {
    return (await certsModule(env, deployer)).certs.service;
  }
  /** The same, with the jobs module's runner (issue and renew as jobs, as the service builds it). */
  async function certsModule(env: Record<string, string> = {}, deployer?: CertificateDeployer, withJobs = false): Promise<{ certs: CertsModule; runner: JobRunner | undefined; dataDir: string }> {
    const m = await openDnsModules(
      {
        MAILSVC_SECRET_KEY: secret,
        MAILSVC_MAIL_HOSTNAME: MAIL,
        MAILSVC_ACME_DIRECTORY_URL: pebble.directoryUrl,
        MAILSVC_ACME_CA_FILE: pebble.caFile,
        MAILSVC_ACME_HTTP_ADDRESS: '127.0.0.1',
        MAILSVC_ACME_HTTP_PORT: String(pebble.httpPort),
        MAILSVC_CERTS_DEPLOY: 'files',
        MAILSVC_CERTS_DIR: certsDir,
        MAILSVC_DOCTOR_TLS_HOST: '127.0.0.1',
        MAILSVC_DOCTOR_TLS_PORTS: `imaps:${imaps.port},https:${https.port}`,
        MAILSVC_DNS_AUTHORITATIVE: knot.address,
        MAILSVC_CLOUDFLARE_API_URL: cf.baseUrl,
        MAILSVC_OUTBOUND_ALLOW_HOSTS: `127.0.0.1:${cf.port}`,
        MAILSVC_CERTS_RETRY_BASE: '600',
        ...env,
      },
      { ca: [cfCa.ca] },
      { databaseUrl: dbUrl, clock },
    );
    opened.push(m);
    const runner = withJobs ? createJobsModule(m.infra).runner : undefined;
    return { certs: createCertsModule(m.infra, { activeDomains: () => m.domains.service.activeNames(), cloudflare: m.dns.cloudflare, deployer, runner }), runner, dataDir: m.infra.settings.dataDir };
  }
  const servedOn = async (port: number) => {
    const { servedSha256 } = await import('./deployer.js');
    return servedSha256('127.0.0.1', port, 'imaps', MAIL);
  };

  beforeAll(async () => {
    knot = await startKnot({ [D]: ['mail A 127.0.0.1', 'panel A 127.0.0.1', 'mta-sts A 127.0.0.1'] }, { tsig: TSIG });
    pebble = await startPebble({ dnsServer: knot.address });
    proxy = await startAcmeProxy(pebble);
    placeholder = makeTestCa([MAIL]);
    cfCa = makeTestCa(['127.0.0.1']);
    cf = await startFakeCloudflare({ cert: cfCa.cert, key: cfCa.key }, ZONE, async ({ op, before, after }: { op: string; before: FakeRecord | null; after: FakeRecord | null }) => {
      const lines: string[] = [];
      if (before && op !== 'create') lines.push(`update delete ${before.name}. ${before.type} ${before.content}`);
      if (after) lines.push(`update add ${after.name}. ${after.ttl} ${after.type} ${after.content}`);
      await knot.update(D, lines);
    });
    work = mkdtempSync(join(tmpdir(), 'mailsvc-certs-'));
    certsDir = join(work, 'live');
    dbUrl = `sqlite://${join(work, 'mailsvc.db')}`;
    imaps = await fileServedTls(certsDir, placeholder, { reads: true });
    https = await fileServedTls(certsDir, placeholder, { reads: true });
    stale = await fileServedTls(certsDir, placeholder, { reads: false });
    const first = opened[0] ?? (await openDnsModules({ MAILSVC_SECRET_KEY: secret }, {}, { databaseUrl: dbUrl }));
    await first.domains.service.createWithDkim(D);
    opened.push(first);
  }, 120_000);

  afterAll(async () => {
    for (const m of opened) await m.close();
    for (const s of [imaps, https, stale]) s?.server.close();
    await cf?.close();
    await proxy?.close();
    await pebble?.stop();
    await knot?.stop();
    placeholder?.cleanup();
    cfCa?.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('a name that is not ours is refused before anything is asked of the CA; an unreachable CA is a clear 503', async () => {
    const svc = await certs();
    await expect(svc.issue('mail', { names: ['www.elsewhere.example'] })).rejects.toMatchObject({ code: 'bad_request', detail: expect.stringMatching(/not one of this server's names/) });
    await expect(svc.issue('mail', { names: ['bad..name'] })).rejects.toMatchObject({ code: 'validation' });
    const dead = await certs({ MAILSVC_ACME_DIRECTORY_URL: `https://127.0.0.1:${await freePort()}/dir` });
    await expect(dead.issue('other')).rejects.toMatchObject({ code: 'unavailable', detail: expect.stringMatching(/cannot be reached .*MAILSVC_ACME_DIRECTORY_URL/) });
  }, 60_000);

  it('HTTP-01 by its own responder: issued by pebble, deployed, and every port proven to serve it; the key is sealed', async () => {
    const svc = await certs();
    const c = await svc.issue('mail');
    expect(c).toMatchObject({ name: 'mail', names: [MAIL], state: 'valid', failures: 0, last_error: null });
    expect(c.proof?.ok).toBe(true);
    expect(c.proof?.ports.map((p) => [p.service, p.matches])).toEqual([['imaps', true], ['https', true]]);
    // What the ports serve is the certificate pebble issued, under pebble's root.
    const shown = await svc.show('mail');
    const leaf = new X509Certificate(shown.chain_pem as string);
    expect(await servedOn(imaps.port)).toBe(c.sha256);
    expect(await servedOn(https.port)).toBe(c.sha256);
    const chain = (shown.chain_pem as string).split(/(?<=-----END CERTIFICATE-----\n?)/).filter((p) => p.includes('BEGIN'));
    const intermediate = new X509Certificate(chain[1] as string);
    expect(leaf.verify(intermediate.publicKey)).toBe(true);
    expect(intermediate.verify(new X509Certificate(await pebble.root()).publicKey)).toBe(true);
    // Sealed at rest, never answered.
    const row = await opened[0]!.infra.db.selectFrom('certificates').selectAll().where('name', '=', 'mail').executeTakeFirstOrThrow();
    expect(row.private_key).not.toContain('PRIVATE KEY');
    expect(JSON.stringify(shown)).not.toContain('PRIVATE KEY');
    const acct = await opened[0]!.infra.db.selectFrom('acme_accounts').selectAll().executeTakeFirstOrThrow();
    expect(acct.account_key).not.toContain('PRIVATE KEY');
    // Nothing due: the check skips it and says when it renews (two thirds of its lifetime).
    const [skip] = await svc.renew();
    expect(skip).toMatchObject({ name: 'mail', action: 'skipped', detail: expect.stringMatching(/two thirds/) });
  }, 120_000);

  it('a renewal keeps the key (a TLSA 3 1 1 record stays true) unless a new one is asked for', async () => {
    const svc = await certs();
    const before = new X509Certificate((await svc.show('mail')).chain_pem as string).publicKey.export({ type: 'spki', format: 'der' });
    const [r] = await svc.renew({ force: true });
    expect(r?.action).toBe('renewed');
    const after = new X509Certificate((await svc.show('mail')).chain_pem as string).publicKey.export({ type: 'spki', format: 'der' });
    expect(after.equals(before)).toBe(true);
    const fresh = await svc.issue('mail', { newKey: true });
    expect(new X509Certificate((await svc.show('mail')).chain_pem as string).publicKey.export({ type: 'spki', format: 'der' }).equals(before)).toBe(false);
    expect(await servedOn(imaps.port)).toBe(fresh.sha256);
  }, 120_000);

  it('a failed challenge leaves the previous certificate serving, counts the failure and waits out the backoff', async () => {
    const svc = await certs();
    const before = await svc.show('mail');
    // The responder listens where pebble does not look: the CA cannot validate. Through the proxy, whose
    // directory URL is another ACME account: one with no valid authorization for the name, which pebble
    // would otherwise hand back now and then (PEBBLE_AUTHZREUSE=0 still reuses 1 in 100: rand.Intn(100) > 0).
    const broken = await certs({ MAILSVC_ACME_HTTP_PORT: String(await freePort()), MAILSVC_ACME_DIRECTORY_URL: proxy.directoryUrl });
    const err: unknown = await broken.issue('mail').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).detail).toMatch(/could not validate mail\.example\.test by http-01/);
    const after = await svc.show('mail');
    expect(after).toMatchObject({ serial: before.serial, sha256: before.sha256, failures: 1, last_error: expect.stringMatching(/could not validate/) });
    expect(Date.parse(after.next_attempt_at as string)).toBeGreaterThanOrEqual(now + 600_000 - 5000);
    expect(await servedOn(imaps.port)).toBe(before.sha256);
    // The timer waits out the backoff; forced, it works again and clears the failures.
    const [r] = await svc.renew();
    expect(r).toMatchObject({ action: 'skipped', detail: expect.stringMatching(/waiting until .* after 1 failed attempt/) });
    const [ok] = await svc.renew({ force: true });
    expect(ok?.certificate).toMatchObject({ failures: 0, next_attempt_at: null, last_error: null });
  }, 120_000);

  it('a certificate a port does not serve after deployment is not taken: the previous files come back and it is an error', async () => {
    const svc = await certs({ MAILSVC_DOCTOR_TLS_PORTS: `imaps:${imaps.port},https:${stale.port}` });
    const before = await svc.show('mail');
    const err: unknown = await svc.issue('mail').catch((e: unknown) => e);
    expect((err as AppError).detail).toMatch(new RegExp(`not proven on https \\(${stale.port}\\): serves another certificate; the previous certificate stays`));
    const after = await svc.show('mail');
    expect(after.sha256).toBe(before.sha256);
    expect(after.proof?.ok).toBe(false);
    expect(readFileSync(join(certsDir, 'mail', 'fullchain.pem'), 'utf8')).toBe(before.chain_pem);
    expect(await servedOn(imaps.port)).toBe(before.sha256);
    // Fixed (every port serves what is deployed), the next forced run takes it.
    const [ok] = await (await certs()).renew({ name: 'mail', force: true });
    expect(ok?.certificate).toMatchObject({ failures: 0, proof: { ok: true } });
  }, 120_000);

  it('DNS-01 by RFC 2136 dynamic updates signed with TSIG into knot; the TXT record is gone afterwards; a wrong key changes nothing', async () => {
    const keyFile = join(work, 'tsig.key');
    writeFileSync(keyFile, `${TSIG.algorithm}:${TSIG.name}:${TSIG.secret}\n`, { mode: 0o600 });
    const svc = await certs({ MAILSVC_ACME_CHALLENGE: 'dns-01-rfc2136', MAILSVC_ACME_RFC2136_SERVER: knot.address, MAILSVC_ACME_TSIG_KEY_FILE: keyFile, MAILSVC_ACME_HTTP_PORT: String(await freePort()) });
    serving.name = 'dns';
    const c = await svc.issue('dns', { names: [MAIL, `mta-sts.${D}`] });
    expect(c).toMatchObject({ names: [MAIL, `mta-sts.${D}`], state: 'valid' });
    expect(await knot.dig(`_acme-challenge.${MAIL}`, 'TXT')).toEqual([]);
    const badFile = join(work, 'bad.key');
    writeFileSync(badFile, `${TSIG.algorithm}:${TSIG.name}:${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    // Another ACME account (the proxy's directory URL): it holds no valid authorization pebble could reuse, so a challenge is asked for.
    const bad = await certs({ MAILSVC_ACME_CHALLENGE: 'dns-01-rfc2136', MAILSVC_ACME_RFC2136_SERVER: knot.address, MAILSVC_ACME_TSIG_KEY_FILE: badFile, MAILSVC_ACME_DIRECTORY_URL: proxy.directoryUrl });
    const err: unknown = await bad.issue('dns').catch((e: unknown) => e);
    expect((err as AppError).detail).toMatch(/dynamic update .* failed.*TSIG/);
    expect((err as AppError).detail).not.toContain(TSIG.secret);
    expect((await svc.show('dns')).sha256).toBe(c.sha256);
  }, 120_000);

  it('DNS-01 through the Cloudflare sync: the record is created tagged mailsvc:acme, served by knot, and removed', async () => {
    const svc = await certs({ MAILSVC_ACME_CHALLENGE: 'dns-01-cloudflare' });
    // A name no earlier test validated: the CA has no authorization it could hand back, so a challenge is always asked for.
    const names = [`autoconfig.${D}`];
    await expect(svc.issue('cf', { names })).rejects.toMatchObject({ detail: expect.stringMatching(/No Cloudflare sync holds _acme-challenge\.autoconfig\.example\.test/) });
    await opened.at(-1)!.dns.cloudflare.configure(D, { zoneId: ZONE.id, token: ZONE.token, enabled: false });
    serving.name = 'cf';
    const before = cf.requests.length;
    const c = await svc.issue('cf', { names });
    expect(c.state).toBe('valid');
    const posts = cf.requests.slice(before).filter((q) => q.startsWith('POST ') || q.startsWith('DELETE '));
    expect(posts.map((q) => q.split(' ')[0])).toEqual(['POST', 'DELETE']);
    expect(cf.records.filter((r) => r.name.startsWith('_acme-challenge'))).toEqual([]);
    expect(await knot.dig(`_acme-challenge.autoconfig.${D}`, 'TXT')).toEqual([]);
  }, 120_000);

  it('issue and renew as jobs (what POST /admin/certs/issue and /renew start): progress on the way, the certificate as the result; while one runs, another is refused with 409 before a job is queued', async () => {
    serving.name = 'job';
    let entered = false;
    let open = (): void => undefined;
    let gate: Promise<void> = Promise.resolve();
    const files = new LocalFileDeployer({ dir: certsDir, host: '127.0.0.1', ports: [{ kind: 'imaps', port: imaps.port }, { kind: 'https', port: https.port }] });
    // A deployment that waits for the test: the job holds the certificate until then.
    const gated: CertificateDeployer = {
      deployAndProve: async (input) => {
        entered = true;
        await gate;
        return files.deployAndProve(input);
      },
    };
    const { certs: mod, runner, dataDir } = await certsModule({}, gated, true);
    const jobs = runner as JobRunner;
    // In the foreground (the CLI's way): progress lines, rising, then the certificate.
    const updates: JobUpdate[] = [];
    const job = await mod.jobs.runIssueHere({ name: 'job' }, (u) => updates.push(u));
    expect(job).toMatchObject({ kind: 'cert-issue', state: 'succeeded', progress: 1, result: { name: 'job', names: [MAIL], state: 'valid', proof: { ok: true } } });
    const messages = updates.map((u) => u.message);
    expect(messages).toEqual(expect.arrayContaining([expect.stringMatching(/^ordering a certificate for mail\.example\.test/), expect.stringMatching(/^mail\.example\.test: answering http-01/), expect.stringMatching(/^issued .*; deploying and proving on imaps, https/)]));
    const fractions = updates.map((u) => u.progress);
    expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
    expect(await servedOn(imaps.port)).toBe((job.result as { sha256: string }).sha256);

    // A renewal job held in its deployment: the certificate is busy.
    gate = new Promise<void>((r) => (open = r));
    entered = false;
    const renewing = await mod.jobs.startRenew({ name: 'job', force: true });
    await expect.poll(() => entered, { timeout: 60_000, interval: 20 }).toBe(true);
    const lock = JSON.parse(readFileSync(join(dataDir, 'certs-job.lock'), 'utf8')) as { pid: number; what: string };
    expect(lock).toMatchObject({ pid: process.pid, what: expect.stringMatching(/^the renewal of certificate job \(/) });
    const queued = async () => (await opened.at(-1)!.infra.db.selectFrom('jobs').select('id').execute()).length;
    const before = await queued();
    await expect(mod.jobs.startIssue({ name: 'job' })).rejects.toMatchObject({ code: 'conflict', detail: expect.stringMatching(/the renewal of certificate job .* is running \(pid \d+, since .*\): one issue or renewal of a certificate at a time/) });
    await expect(mod.jobs.startRenew({})).rejects.toMatchObject({ code: 'conflict' });
    // The service directly (the timer's path) is refused too: the lock is taken inside the work.
    await expect(mod.service.issue('job')).rejects.toMatchObject({ code: 'conflict' });
    expect(await queued()).toBe(before);
    expect((await jobs.get(renewing)).state).toBe('running');
    open();
    await expect.poll(async () => (await jobs.get(renewing)).state, { timeout: 60_000, interval: 50 }).toBe('succeeded');
    expect((await jobs.get(renewing)).result).toMatchObject([{ name: 'job', action: 'renewed', detail: 'forced', certificate: { state: 'valid', failures: 0 } }]);
    expect(existsSync(join(dataDir, 'certs-job.lock'))).toBe(false);
    // It ended: the next one runs.
    const again = await mod.jobs.startIssue({ name: 'job' });
    await expect.poll(async () => (await jobs.get(again)).state, { timeout: 60_000, interval: 50 }).toBe('succeeded');
  }, 120_000);

  it('ARI: the window the CA suggests decides, and the new order names the certificate it replaces', async () => {
    const svc = await certs({ MAILSVC_ACME_DIRECTORY_URL: proxy.directoryUrl });
    serving.name = 'ari';
    // A window far ahead: not due, and the reason is the ARI, not two thirds.
    proxy.ari = { start: new Date(now + 30 * 86_400_000), end: new Date(now + 31 * 86_400_000) };
    const first = await svc.issue('ari');
    const firstPem = (await svc.show('ari')).chain_pem as string;
    const skipped = (await svc.renew({ name: 'ari' }))[0];
    expect(skipped).toMatchObject({ action: 'skipped', detail: expect.stringMatching(/ARI/) });
    expect(proxy.ariAsked).toContain(ariCertId(firstPem));
    // The window opens (the clock moves past its start; the ARI is asked again after its Retry-After).
    proxy.ari = { start: new Date(now + 3_600_000), end: new Date(now + 7_200_000), retryAfter: 60 };
    now += 7 * 3_600_000;
    const renewed = (await svc.renew({ name: 'ari' }))[0];
    expect(renewed).toMatchObject({ action: 'renewed', detail: expect.stringMatching(/renewal window .*ARI/) });
    expect(proxy.replaces).toEqual([ariCertId(firstPem)]);
    expect(renewed?.certificate.serial).not.toBe(first.serial);
  }, 120_000);

  it('rate limits: a short Retry-After is waited once; a long one ends the attempt and sets the next one', async () => {
    const svc = await certs({ MAILSVC_ACME_DIRECTORY_URL: proxy.directoryUrl });
    proxy.rateLimitNext = { pathEndsWith: 'order-plz', retryAfter: 1 };
    const t0 = Date.now();
    await expect(svc.issue('ari')).resolves.toMatchObject({ state: 'valid' });
    expect(proxy.rateLimited).toBe(1);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    proxy.rateLimitNext = { pathEndsWith: 'order-plz', retryAfter: 3600 };
    await expect(svc.issue('ari')).rejects.toMatchObject({ code: 'rate_limited', extra: { retryAfter: 3600 } });
    const row = await svc.show('ari');
    expect(Date.parse(row.next_attempt_at as string)).toBeGreaterThanOrEqual(now + 3600_000);
    expect((await svc.renew({ name: 'ari' }))[0]).toMatchObject({ action: 'skipped', detail: expect.stringMatching(/waiting until/) });
  }, 120_000);

  it('revoke: pebble marks it revoked; the next check renews it with a new key; /health alarms inside 14 days', async () => {
    serving.name = 'mail';
    const svc = await certs();
    const c = await svc.show('mail');
    const revoked = await svc.revoke('mail', 4);
    expect(revoked.state).toBe('revoked');
    const status = await httpsGet(`${pebble.managementUrl}/cert-status-by-serial/${c.serial}`, pebble.tls.ca);
    expect(status.body).toMatch(/Revoked/i);
    await expect(svc.revoke('mail')).rejects.toMatchObject({ code: 'conflict' });
    const [r] = await svc.renew({ name: 'mail' });
    expect(r).toMatchObject({ action: 'renewed', detail: 'the certificate was revoked' });
    const spki = (pem: string) => new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' });
    expect(spki((await svc.show('mail')).chain_pem as string).equals(spki(c.chain_pem as string))).toBe(false);
    expect(await svc.expiring()).toEqual([]);
    const notAfter = Date.parse((await svc.show('mail')).not_after as string);
    now = notAfter - 10 * 86_400_000;
    expect(await svc.expiring()).toContainEqual({ name: 'mail', days_left: 10 });
    now = Date.now();
  }, 120_000);
});
