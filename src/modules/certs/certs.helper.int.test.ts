import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startHelperProcess } from '../../../test/helpers/helper-process.js';
import type { HelperProcess } from '../../../test/helpers/helper-process.js';
import { knotUnavailable, startKnot } from '../../../test/helpers/knot.js';
import type { Knot } from '../../../test/helpers/knot.js';
import { pebbleUnavailable, startPebble } from '../../../test/helpers/pebble.js';
import type { Pebble } from '../../../test/helpers/pebble.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { makeTestCa } from '../../../test/helpers/test-ca.js';
import type { TestCa } from '../../../test/helpers/test-ca.js';
import { startTlsDaemons, tlsDaemonsUnavailable } from '../../../test/helpers/tls-daemons.js';
import type { TlsDaemons } from '../../../test/helpers/tls-daemons.js';
import type { TlsModule } from '../tls/index.js';
import type { CertsModule } from './index.js';

/**
 * The whole path on a real host's parts: a certificate issued by pebble
 * (HTTP-01 by mailsvc's own responder, the name resolved by knot), handed by
 * the certs module — built as the service builds it, MAILSVC_CERTS_DEPLOY
 * left at its default (`helper`) — to the tls module's deployer, installed by
 * `mailsvc helper serve` (its own process, on its unix socket) into real
 * Postfix, Dovecot and nginx, and proven on every port on the wire. The
 * daemons' Dovecot ignores `doveadm reload`, so each deploy must also notice
 * the stale Dovecot and restart it.
 */
const D = 'example.test';
const MAIL = `mail.${D}`;
const why = pebbleUnavailable() ?? knotUnavailable() ?? tlsDaemonsUnavailable();
if (why) skipNotice('pebble, knot and Postfix, Dovecot and nginx serving certificates', why);
const group = spawnSync('getent', ['group', 'ssl-cert']).status === 0 ? 'ssl-cert' : '0';
const KINDS = ['smtp', 'submission', 'smtps', 'imap', 'imaps', 'pop3', 'pop3s', 'https'] as const;

describe.skipIf(why !== null)('certs → tls: a pebble certificate deployed through the helper socket into real Postfix and Dovecot', { timeout: 300_000 }, () => {
  let knot: Knot;
  let pebble: Pebble;
  let placeholder: TestCa;
  let d: TlsDaemons;
  let helper: HelperProcess;
  let db: TestDatabase;
  let t: TestApp;
  let certs: CertsModule;
  let tls: TlsModule;

  /** What each port serves now, read independently of the deployer. */
  const served = async (): Promise<Record<string, string | null>> =>
    Object.fromEntries((await tls.prober.read(KINDS.map((k) => ({ kind: k, port: d.ports[k] })))).map((r) => [r.kind, r.served?.sha256 ?? null]));
  const all = (sha: string): Record<string, string> => Object.fromEntries(KINDS.map((k) => [k, sha]));

  beforeAll(async () => {
    knot = await startKnot({ [D]: ['mail A 127.0.0.1'] });
    pebble = await startPebble({ dnsServer: knot.address });
    placeholder = makeTestCa([MAIL]);
    d = await startTlsDaemons({ chain: placeholder.chain, key: join(placeholder.dir, 'server.key') }, MAIL);
    helper = await startHelperProcess({ fakes: false, env: { ...d.helperEnv, MAILSVC_TLS_GROUP: group } });
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, {
      MAILSVC_HELPER: `unix:${helper.socket}`,
      MAILSVC_MFA_REQUIRED: 'no',
      MAILSVC_MAIL_HOSTNAME: MAIL,
      MAILSVC_ACME_DIRECTORY_URL: pebble.directoryUrl,
      MAILSVC_ACME_CA_FILE: pebble.caFile,
      MAILSVC_ACME_HTTP_ADDRESS: '127.0.0.1',
      MAILSVC_ACME_HTTP_PORT: String(pebble.httpPort),
      MAILSVC_DOCTOR_TLS_PORTS: d.portList,
      MAILSVC_DOCTOR_TLS_HOST: '127.0.0.1',
      MAILSVC_DOCTOR_TLS_NAME: MAIL,
    });
    certs = await t.ctx.modules.get('certs');
    tls = await t.ctx.modules.get('tls');
  }, 180_000);

  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await helper?.stop();
    await d?.stop();
    await pebble?.stop();
    await knot?.stop();
    placeholder?.cleanup();
  });

  it('before: every port serves the placeholder (the set-up is what it claims)', async () => {
    expect(await served()).toEqual(all(new X509Certificate(placeholder.cert).fingerprint256.replace(/:/g, '').toLowerCase()));
  });

  it('issue: pebble signs it, the helper installs it, every port of Postfix, Dovecot and nginx serves it (Dovecot after a restart), no file deployer', async () => {
    const c = await certs.service.issue('mail');
    expect(c.state).toBe('valid');
    expect(c.proof?.ok, JSON.stringify(c.proof, null, 2) + d.logs().slice(-2000)).toBe(true);
    // The tls deployer's proof: every configured port (IMAP/POP3 STARTTLS with imaps/pop3s), each reading the new leaf.
    expect(c.proof?.ports.map((p) => p.service).sort()).toEqual([...KINDS].sort());
    for (const p of c.proof?.ports ?? []) expect(p, p.service).toMatchObject({ matches: true, servedSha256: c.sha256 });
    expect(await served()).toEqual(all(c.sha256 as string));
    // Signed by pebble's CA, not the placeholder's.
    const leaf = new X509Certificate((await certs.service.show('mail')).chain_pem as string);
    expect(leaf.checkIssued(new X509Certificate(placeholder.cert))).toBe(false);
    expect(leaf.subjectAltName).toContain(`DNS:${MAIL}`);
    // Through the helper process's socket (only it knows MAILSVC_TLS_DIR and the service manager): the key
    // root's, 0640; the Dovecot that ignored the reload restarted once.
    const key = statSync(join(d.helperEnv.MAILSVC_TLS_DIR ?? '', 'mail', `${(c.sha256 as string).slice(0, 16)}.key.pem`));
    expect({ mode: key.mode & 0o777, uid: key.uid }).toEqual({ mode: 0o640, uid: 0 });
    expect(d.restarts()).toEqual(['restart dovecot.service']);
    expect(helper.alive()).toBe(true);
    // The built-in file deployer was not used.
    expect(existsSync(join(t.dataDir, 'certs'))).toBe(false);
  });

  it('renew --force: a new certificate from pebble, the same key, proven on every port again; the old one is served nowhere', async () => {
    const before = await certs.service.show('mail');
    const restarts = d.restarts().length;
    const [out] = await certs.service.renew({ name: 'mail', force: true });
    expect(out?.action, out?.detail).toBe('renewed');
    expect(out?.certificate.sha256).not.toBe(before.sha256);
    expect(out?.certificate.proof?.ok).toBe(true);
    expect(await served()).toEqual(all(out?.certificate.sha256 as string));
    const after = await certs.service.show('mail');
    expect(new X509Certificate(after.chain_pem as string).publicKey.export({ type: 'spki', format: 'der' })).toEqual(new X509Certificate(before.chain_pem as string).publicKey.export({ type: 'spki', format: 'der' }));
    expect(d.restarts().slice(restarts)).toEqual(['restart dovecot.service']);
  });
});
