import { randomBytes, X509Certificate, createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../test/helpers/app.js';
import { openDnsModules } from '../../../test/helpers/dns-modules.js';
import type { DnsTestModules } from '../../../test/helpers/dns-modules.js';
import { knotUnavailable, startKnot } from '../../../test/helpers/knot.js';
import type { Knot } from '../../../test/helpers/knot.js';
import { pebbleUnavailable, startPebble } from '../../../test/helpers/pebble.js';
import type { Pebble } from '../../../test/helpers/pebble.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { queryTlsa } from '../../adapters/dns/tlsa-query.js';
import { spkiSha256 } from '../dns/index.js';
import type { CertService } from './cert.service.js';
import { createCertsModule } from './index.js';
import type { CertificateDeployer } from './index.js';

/**
 * The DANE ordering of the certs flow, against pebble (the certificates) and a
 * real knot (the zone's authoritative server, where the plan's TLSA records are
 * published), with the project's clock moved by the test: the first
 * certificate's key becomes the current TLSA record; a renewal that keeps the
 * key changes nothing; a renewal with a new key publishes the next record and
 * holds the certificate back; only the renewal check after every server
 * answers both records and the TTL has passed deploys it — also when that
 * check runs in a fresh service built from the database (a crash).
 *
 * The deployer here records each deploy together with what knot answers for
 * _25._tcp at that moment (the deploy through the helper and the proof on the
 * wire have their own tests: certs.helper.int.test.ts, tls-deploy.int.test.ts).
 */
const why = pebbleUnavailable() ?? knotUnavailable();
if (why) skipNotice('pebble and knot', why);

const Z = 'example.test';
const MAIL = `mail.${Z}`;
const NAME = `_25._tcp.${MAIL}`;
const TTL = 300;

describe.skipIf(why !== null)('certs and DANE: a new key is deployed only after its TLSA record', { timeout: 240_000 }, () => {
  let knot: Knot;
  let pebble: Pebble;
  let work: string;
  let dbUrl: string;
  const secret = randomBytes(32).toString('base64');
  const clock = new FakeClock(Date.now());
  const opened: DnsTestModules[] = [];
  /** Every deploy: the leaf's SPKI SHA-256 and the TLSA records knot answered at that moment. */
  const deploys: { spki: string; sha256: string; served: string[] }[] = [];
  let published = 0;
  let crashBeforeComplete = false;

  const served = async (): Promise<string[]> => {
    const a = await queryTlsa({ host: '127.0.0.1', port: knot.port }, NAME);
    return a.kind === 'records' ? a.records.map((r) => r.data).sort() : [];
  };
  const deployer: CertificateDeployer = {
    deployAndProve: async ({ chainPem }) => {
      const leaf = new X509Certificate(chainPem);
      const sha256 = createHash('sha256').update(leaf.raw).digest('hex');
      deploys.push({ spki: spkiSha256(chainPem), sha256, served: await served() });
      return { ok: true, ports: [{ service: 'smtp', port: 25, servedSha256: sha256, matches: true }] };
    },
  };

  /** A service as the timer's process builds it: from the database alone. */
  async function open(): Promise<{ certs: CertService; m: DnsTestModules }> {
    const m: DnsTestModules = await openDnsModules(
      {
        MAILSVC_SECRET_KEY: secret,
        MAILSVC_MAIL_HOSTNAME: MAIL,
        MAILSVC_ACME_DIRECTORY_URL: pebble.directoryUrl,
        MAILSVC_ACME_CA_FILE: pebble.caFile,
        MAILSVC_ACME_HTTP_ADDRESS: '127.0.0.1',
        MAILSVC_ACME_HTTP_PORT: String(pebble.httpPort),
        MAILSVC_DOCTOR_TLS_PORTS: 'smtp:25',
        MAILSVC_DNS_RESOLVER: knot.address,
        MAILSVC_DNS_AUTHORITATIVE: knot.address,
      },
      {
        // The plan's TLSA records go to the zone's server (as the Cloudflare sync or an operator does).
        publishTlsa: async (host) => {
          const spkis = (await m.dns.dane.records(host)).map((r) => r.data);
          await knot.update(Z, [`update delete ${NAME}. TLSA`, ...spkis.map((s) => `update add ${NAME}. ${TTL} TLSA 3 1 1 ${s}`)]);
          published += 1;
          return true;
        },
      },
      { databaseUrl: dbUrl, clock },
    );
    opened.push(m);
    // crashBeforeComplete: the process dies after the deploy was proven and stored, before the key change is completed.
    const dane = {
      keys: (host: string) => {
        const k = m.dns.dane.keys(host);
        return {
          ...k,
          completeKeyChange: () => {
            if (crashBeforeComplete) {
              crashBeforeComplete = false;
              return Promise.reject(new Error('the process died (simulated crash)'));
            }
            return k.completeKeyChange();
          },
        };
      },
    };
    return { m, certs: createCertsModule(m.infra, { activeDomains: () => m.domains.service.activeNames(), deployer, dane }).service };
  }

  beforeAll(async () => {
    knot = await startKnot({ [Z]: ['mail A 127.0.0.1'] });
    pebble = await startPebble({ dnsServer: knot.address });
    work = mkdtempSync(join(tmpdir(), 'mailsvc-certs-dane-'));
    dbUrl = `sqlite://${join(work, 'mailsvc.db')}`;
  }, 120_000);

  afterAll(async () => {
    for (const m of opened) await m.close();
    await pebble?.stop();
    await knot?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the first certificate: deployed, and its key becomes the current TLSA record', async () => {
    const { certs, m } = await open();
    await m.domains.service.create(Z);
    const c = await certs.issue('mail');
    expect(c).toMatchObject({ state: 'valid', pending: null });
    expect(deploys).toHaveLength(1);
    const spki = deploys[0]?.spki as string;
    expect(await m.dns.dane.status(MAIL)).toMatchObject({ state: 'idle', current_spki: spki, next_spki: null });
    expect(await served()).toEqual([`${spki}`]);
  });

  it('a renewal that keeps the key: deployed at once, nothing published', async () => {
    const { certs, m } = await open();
    const before = published;
    const [out] = await certs.renew({ name: 'mail', force: true });
    expect(out?.action, out?.detail).toBe('renewed');
    expect(deploys).toHaveLength(2);
    expect(deploys[1]?.spki).toBe(deploys[0]?.spki);
    expect(deploys[1]?.sha256).not.toBe(deploys[0]?.sha256);
    expect(published).toBe(before);
    expect(await m.dns.dane.status(MAIL)).toMatchObject({ state: 'idle', current_spki: deploys[0]?.spki, next_spki: null });
  });

  it('a new key: the next record is published and the certificate held back, not deployed; the check waits for the TTL', async () => {
    const { certs, m } = await open();
    const inService = (await certs.show('mail')).sha256;
    const c = await certs.issue('mail', { newKey: true });
    expect(deploys).toHaveLength(2);
    expect(c.sha256).toBe(inService);
    expect(c.pending?.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(c.pending?.sha256).not.toBe(inService);
    const pending = (await m.infra.db.selectFrom('certificates').select(['pending_chain_pem', 'pending_private_key']).where('name', '=', 'mail').executeTakeFirstOrThrow());
    expect(pending.pending_private_key).not.toContain('PRIVATE KEY'); // sealed
    const next = spkiSha256(pending.pending_chain_pem as string);
    expect(next).not.toBe(deploys[0]?.spki);
    const st = await m.dns.dane.status(MAIL);
    // knot is the only authoritative server and already answers both: the TTL is what is left.
    expect(st).toMatchObject({ state: 'waiting-ttl', current_spki: deploys[0]?.spki, next_spki: next, deploy_allowed: false });
    expect(await served()).toEqual([`${deploys[0]?.spki}`, `${next}`].sort());

    // The timer, a second before the TTL has passed: waits, deploys nothing, orders nothing.
    clock.advance(TTL * 1000 - 1000);
    const [out] = await certs.renew({ force: true });
    expect(out).toMatchObject({ name: 'mail', action: 'skipped' });
    expect(out?.detail).toMatch(/waits for its DANE record \(waiting-ttl: the TTL/);
    expect(deploys).toHaveLength(2);
    expect((await certs.show('mail')).pending?.sha256).toBe(c.pending?.sha256);
  });

  it('crash-resume: a fresh service built from the database deploys it once the TTL has passed, then the old record is withdrawn', async () => {
    const { certs, m } = await open();
    clock.advance(1000);
    const held = (await certs.show('mail')).pending?.sha256;
    const [out] = await certs.renew();
    expect(out?.action, out?.detail).toBe('renewed');
    expect(deploys).toHaveLength(3);
    const next = deploys[2]?.spki as string;
    expect(deploys[2]?.sha256).toBe(held);
    // When it was deployed, the zone already answered the new key's record beside the old one.
    expect(deploys[2]?.served).toEqual([`${deploys[0]?.spki}`, `${next}`].sort());
    const now = await certs.show('mail');
    expect(now).toMatchObject({ sha256: held, pending: null });
    expect(await m.dns.dane.status(MAIL)).toMatchObject({ state: 'idle', current_spki: next, next_spki: null });
    expect(await served()).toEqual([`${next}`]);
    // And the next check has nothing to do.
    const [again] = await certs.renew();
    expect(again?.action).toBe('skipped');
    expect(deploys).toHaveLength(3);
  });

  it('crash-resume after the deploy, before the key change was completed: the next check completes it without deploying again', async () => {
    const first = await open();
    await first.certs.issue('mail', { newKey: true });
    const held = await first.m.infra.db.selectFrom('certificates').select('pending_chain_pem').where('name', '=', 'mail').executeTakeFirstOrThrow();
    const next = spkiSha256(held.pending_chain_pem as string);
    clock.advance(TTL * 1000);
    crashBeforeComplete = true;
    const [out] = await first.certs.renew();
    expect(out?.action).toBe('failed');
    expect(deploys).toHaveLength(4);
    expect(deploys[3]?.spki).toBe(next);
    expect(await first.m.dns.dane.status(MAIL)).toMatchObject({ state: 'ready-to-deploy', next_spki: next });
    expect(await served()).toEqual([deploys[2]?.spki, next].sort());

    const { certs, m } = await open();
    const [again] = await certs.renew();
    expect(again?.action).toBe('skipped');
    expect(deploys).toHaveLength(4);
    expect(await m.dns.dane.status(MAIL)).toMatchObject({ state: 'idle', current_spki: next, next_spki: null });
    expect(await served()).toEqual([next]);
    expect((await certs.show('mail')).sha256).toBe(deploys[3]?.sha256);
  });
});
