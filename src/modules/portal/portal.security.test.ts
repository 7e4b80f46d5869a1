import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { ADMIN_PASSWORD, ADMIN_USER, startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { cookieOf, portalClient, portalSignIn, signInRequest } from '../../../test/helpers/portal.js';
import { oathtoolCode } from '../../../test/helpers/totp.js';
import type { MailboxHost } from '../../adapters/dovecot/mailbox-host.js';
import type { SieveRules } from '../../shared/sieve-rules.js';

// The portal's own rules: a session is one mailbox and nothing else; sign-in
// takes the mailbox password only, with its own lockout and auth-log lines;
// CSRF; the administrator's switch; the audit log. Dovecot is played by a
// recorder of what the portal asked it for WHICH mailbox (the real Dovecot
// path is test/portal-mail.test.ts): here the question is only whose data.
const ALICE = 'alice@example.org';
const BOB = 'bob@example.org';
const CAROL = 'carol@example.org';
const PW = { alice: 'alice-mailbox-pw', bob: 'bob-mailbox-pw1' };

class RecordingHost implements MailboxHost {
  readonly asked: string[] = [];
  readonly sieve = new Map<string, SieveRules>();
  usage(user: string) {
    this.asked.push(user);
    return Promise.resolve({ storage_bytes: user === BOB ? 999_424 : 1024, storage_limit_bytes: null, messages: user === BOB ? 77 : 1, message_limit: null });
  }
  putSieve(user: string, rules: SieveRules) {
    this.asked.push(user);
    this.sieve.set(user, rules);
    return Promise.resolve();
  }
}

for (const dialect of DIALECTS) {
  describe(`user portal security (${dialect})`, { timeout: 120_000 }, async () => {
    const available = await dialectAvailable(dialect);
    /** Bob's password changes in one test: each dialect starts from the same. */
    const pw = { ...PW };
    let db: TestDatabase;
    let t: TestApp;
    let host: RecordingHost;
    const kicked: string[] = [];
    let bobAppId = '';
    let bobAppPassword = '';

    beforeAll(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      host = new RecordingHost();
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_ENABLE_USER_PORTAL: 'yes', MAILSVC_API_AUTH_FAIL_LIMIT: '3', MAILSVC_MAIL_HOST: 'mail.example.org' }, {
        mailboxHost: host,
        kicker: { kick: (user) => { kicked.push(user); return Promise.resolve({ kicked: true, detail: 'ok' }); } },
      });
      await t.ctx.domains.create('example.org');
      await t.ctx.domains.create('example.net');
      await t.ctx.accounts.create({ address: ALICE, password: pw.alice });
      await t.ctx.accounts.create({ address: BOB, password: pw.bob });
      await t.ctx.accounts.create({ address: CAROL, password: 'carol-mailbox-pw' });
      const bobApp = await t.ctx.appPasswords.create(BOB, { name: 'bob phone' });
      bobAppId = bobApp.id;
      bobAppPassword = bobApp.password;
    });
    afterAll(async () => {
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('two users: every portal route, called by Alice, touches and shows Alice only (the walk covers each route of the OpenAPI document)', async () => {
      const alice = await portalSignIn(t.app, ALICE, pw.alice);
      const bob = await portalSignIn(t.app, BOB, pw.bob);
      expect((await bob.call('PUT', 'forwarding', { to: 'bob-elsewhere@example.net', keep_copy: true })).statusCode).toBe(200);
      expect((await bob.call('PUT', 'vacation', { enabled: true, subject: 'Bob away', body: 'Bob is away', start: null, end: null, days: 3 })).statusCode).toBe(200);
      host.asked.length = 0;
      const noBob = (r: LightMyRequestResponse) => {
        expect(r.statusCode, r.body).toBeLessThan(500);
        // Random ids and secrets (Alice's new app password) may spell "bob" by chance: they are left out of
        // that check; Bob's own id is looked for in the whole body.
        const randomless = r.body.replace(/\b[a-z0-9]{12}\.[a-z0-9]{32}\b/g, '(app password)').replace(/"(id|secret)":"[A-Za-z0-9]*"/g, '"$1":"(random)"');
        expect(randomless).not.toContain('bob');
        expect(r.body).not.toContain(bobAppId);
      };
      const walk: Record<string, () => Promise<void>> = {
        'GET /portal/api/session': async () => {
          const r = await alice.call('GET', 'session');
          noBob(r);
          expect(r.json<{ address: string }>().address).toBe(ALICE);
        },
        'GET /portal/api/me': async () => {
          const r = await alice.call('GET', 'me');
          noBob(r);
          expect(r.json<{ address: string }>().address).toBe(ALICE);
        },
        'GET /portal/api/usage': async () => {
          const r = await alice.call('GET', 'usage');
          noBob(r);
          expect(r.json<{ messages: number }>().messages).toBe(1);
        },
        'GET /portal/api/app-passwords': async () => {
          const r = await alice.call('GET', 'app-passwords');
          noBob(r);
          expect(r.json()).toEqual([]);
        },
        'POST /portal/api/app-passwords': async () => {
          const r = await alice.call('POST', 'app-passwords', { name: 'alice laptop' });
          expect(r.statusCode).toBe(201);
          noBob(r);
          expect((await t.ctx.appPasswords.list(BOB)).map((p) => p.name)).toEqual(['bob phone']);
        },
        'DELETE /portal/api/app-passwords/:appId': async () => {
          // Bob's id, from Alice's session: not found, and Bob's password still works.
          const r = await alice.call('DELETE', `app-passwords/${bobAppId}`);
          expect(r.statusCode).toBe(404);
          expect(r.body).not.toContain('bob');
          expect((await t.ctx.mailAuth.check({ user: BOB, password: bobAppPassword, protocol: 'imap', remoteIp: '127.0.0.1' })).ok).toBe(true);
        },
        'POST /portal/api/device-profile': async () => {
          // Alice's profile (the autoconfiguration module's), with a fresh app password of hers inside.
          const r = await alice.call('POST', 'device-profile', { app_password_name: 'alice iphone' });
          expect(r.statusCode).toBe(200);
          noBob(r);
          expect(r.body).toContain('alice@');
          expect(r.body).toContain('mail.example.org');
          expect((await t.ctx.appPasswords.list(BOB)).map((p) => p.name)).toEqual(['bob phone']);
        },
        'GET /portal/api/forwarding': async () => {
          const r = await alice.call('GET', 'forwarding');
          noBob(r);
          expect(r.json()).toEqual({ to: null, keep_copy: true });
        },
        'PUT /portal/api/forwarding': async () => {
          const r = await alice.call('PUT', 'forwarding', { to: 'carol@example.net', keep_copy: false });
          noBob(r);
          expect(host.sieve.get(BOB)?.forward?.to).toBe('bob-elsewhere@example.net');
        },
        'GET /portal/api/vacation': async () => {
          const r = await alice.call('GET', 'vacation');
          noBob(r);
          expect(r.json<{ enabled: boolean }>().enabled).toBe(false);
        },
        'PUT /portal/api/vacation': async () => {
          const r = await alice.call('PUT', 'vacation', { enabled: true, subject: 'Alice away', body: 'Away', start: '2030-01-01', end: '2030-01-10', days: 7 });
          noBob(r);
          expect(host.sieve.get(BOB)?.vacation?.subject).toBe('Bob away');
        },
        'POST /portal/api/password': async () => {
          const r = await alice.call('POST', 'password', { current_password: pw.bob, new_password: 'whatever-new-pw' });
          // Bob's password does not open Alice's change, and Bob's password stays.
          expect(r.statusCode).toBe(403);
          noBob(r);
          expect((await signInRequest(t.app, { address: BOB, password: pw.bob }, '10.9.9.1')).statusCode).toBe(200);
        },
        'POST /portal/api/totp': async () => {
          const r = await alice.call('POST', 'totp');
          noBob(r);
          expect(r.json<{ uri: string }>().uri).toContain('alice');
        },
        'POST /portal/api/totp/confirm': async () => {
          noBob(await alice.call('POST', 'totp/confirm', { code: '000000' }));
          expect((await bob.call('GET', 'me')).json<{ totp_enabled: boolean }>().totp_enabled).toBe(false);
        },
        'POST /portal/api/totp/disable': async () => {
          noBob(await alice.call('POST', 'totp/disable', { code: '000000' }));
        },
        'DELETE /portal/api/session': async () => {
          const r = await alice.call('DELETE', 'session');
          expect(r.statusCode).toBe(204);
          // Bob's session lives on.
          expect((await bob.call('GET', 'me')).statusCode).toBe(200);
          expect((await alice.call('GET', 'me')).statusCode).toBe(401);
        },
        'POST /portal/api/session': async () => {
          // Alice's password on Bob's address: refused.
          const r = await signInRequest(t.app, { address: BOB, password: pw.alice }, '10.9.9.2');
          expect(r.statusCode).toBe(401);
          expect(cookieOf(r)).toBeUndefined();
        },
      };
      const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, unknown>> }>();
      const routes = Object.entries(doc.paths)
        .filter(([p]) => p.startsWith('/portal/api/'))
        .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`));
      expect(routes.sort()).toEqual(Object.keys(walk).sort());
      for (const step of Object.values(walk)) await step();
      // Every question to Dovecot was about Alice.
      expect(new Set(host.asked)).toEqual(new Set([ALICE]));
    });

    it.skipIf(!available)('sign-in takes the mailbox password only: never an app password, never the administrator\'s credentials', async () => {
      expect((await signInRequest(t.app, { address: BOB, password: bobAppPassword }, '10.1.0.1')).statusCode).toBe(401);
      expect((await signInRequest(t.app, { address: ADMIN_USER, password: ADMIN_PASSWORD }, '10.1.0.2')).statusCode).toBe(401);
      expect((await signInRequest(t.app, { address: ALICE, password: ADMIN_PASSWORD }, '10.1.0.3')).statusCode).toBe(401);
      // And the portal's cookie opens nothing of the admin API.
      const bob = await portalSignIn(t.app, BOB, pw.bob);
      const r = await t.app.inject({ method: 'GET', url: '/accounts', headers: { cookie: `__Host-mailsvc_portal=${bob.cookie}` } });
      expect(r.statusCode).toBe(401);
    });

    it.skipIf(!available)('failures are written for fail2ban (mailsvc-portal) and locked out per address and per client address, apart from the admin API', async () => {
      // Per address: three failures from three addresses block the right password from a fourth.
      for (const ip of ['10.2.0.1', '10.2.0.2', '10.2.0.3']) expect((await signInRequest(t.app, { address: CAROL, password: 'wrong-wrong' }, ip)).statusCode).toBe(401);
      const blocked = await signInRequest(t.app, { address: CAROL, password: 'carol-mailbox-pw' }, '10.2.0.4');
      expect(blocked.statusCode).toBe(429);
      expect(blocked.headers['retry-after']).toBeDefined();
      // Per client address: three unknown addresses from one IP block Bob's right password from it.
      for (const n of [1, 2, 3]) expect((await signInRequest(t.app, { address: `nobody${n}@example.org`, password: 'x' }, '10.3.0.1')).statusCode).toBe(401);
      expect((await signInRequest(t.app, { address: BOB, password: pw.bob }, '10.3.0.1')).statusCode).toBe(429);
      expect((await signInRequest(t.app, { address: BOB, password: pw.bob }, '10.3.0.2')).statusCode).toBe(200);
      // The admin API's lockout of that address is untouched.
      expect((await t.app.inject({ method: 'GET', url: '/accounts', remoteAddress: '10.3.0.1', headers: { authorization: t.basic() } })).statusCode).toBe(200);
      const log = readFileSync(t.settings.authLog, 'utf8');
      expect(log).toMatch(/^\S+Z mailsvc-portal: authentication failure for carol@example\.org from 10\.2\.0\.1$/m);
      expect(log).toMatch(/mailsvc-portal: authentication failure for nobody1@example\.org from 10\.3\.0\.1$/m);
      expect(log).not.toContain('wrong-wrong');
    });

    it.skipIf(!available)('a change needs the session\'s CSRF token and a same-origin request; no cookie is 401', async () => {
      const bob = await portalSignIn(t.app, BOB, pw.bob);
      expect((await bob.call('PUT', 'forwarding', { to: null, keep_copy: true }, { csrf: null })).statusCode).toBe(403);
      const other = await portalSignIn(t.app, BOB, pw.bob);
      expect((await bob.call('PUT', 'forwarding', { to: null, keep_copy: true }, { csrf: other.csrf })).statusCode).toBe(403);
      const cross = await t.app.inject({ method: 'PUT', url: '/portal/api/forwarding', headers: { cookie: `__Host-mailsvc_portal=${bob.cookie}`, 'x-portal-csrf': bob.csrf, 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' }, payload: '{"to":null,"keep_copy":true}' });
      expect(cross.statusCode).toBe(403);
      expect((await portalClient(t.app, 'not-a-session', 'x').call('GET', 'me')).statusCode).toBe(401);
      expect(host.sieve.get(BOB)?.forward?.to).toBe('bob-elsewhere@example.net');
    });

    it.skipIf(!available)('the administrator switches self-service off per mailbox and per domain (API and its audit), sessions end', async () => {
      const bob = await portalSignIn(t.app, BOB, pw.bob);
      const off = await t.app.inject({ method: 'PUT', url: `/portal-access/mailboxes/${BOB}`, headers: { authorization: t.basic(), 'content-type': 'application/json' }, payload: '{"self_service":false}' });
      expect(off.json()).toEqual({ name: BOB, self_service: false, changed: true });
      expect((await bob.call('GET', 'me')).statusCode).toBe(403);
      expect((await bob.call('GET', 'me')).statusCode).toBe(401);
      expect((await signInRequest(t.app, { address: BOB, password: pw.bob }, '10.4.0.1')).statusCode).toBe(403);
      await t.app.inject({ method: 'PUT', url: `/portal-access/mailboxes/${BOB}`, headers: { authorization: t.basic(), 'content-type': 'application/json' }, payload: '{"self_service":true}' });
      expect((await signInRequest(t.app, { address: BOB, password: pw.bob }, '10.4.0.1')).statusCode).toBe(200);
      await t.app.inject({ method: 'PUT', url: '/portal-access/domains/example.org', headers: { authorization: t.basic(), 'content-type': 'application/json' }, payload: '{"self_service":false}' });
      expect((await signInRequest(t.app, { address: BOB, password: pw.bob }, '10.4.0.1')).statusCode).toBe(403);
      const list = await t.app.inject({ method: 'GET', url: '/portal-access', headers: { authorization: t.basic() } });
      expect(list.json()).toEqual({ disabled_domains: ['example.org'], disabled_mailboxes: [] });
      const unknown = await t.app.inject({ method: 'PUT', url: '/portal-access/domains/nowhere.example', headers: { authorization: t.basic(), 'content-type': 'application/json' }, payload: '{"self_service":false}' });
      expect(unknown.statusCode).toBe(404);
      await t.app.inject({ method: 'PUT', url: '/portal-access/domains/example.org', headers: { authorization: t.basic(), 'content-type': 'application/json' }, payload: '{"self_service":true}' });
      const audit = await t.app.inject({ method: 'GET', url: '/admin/audit?limit=200', headers: { authorization: t.basic() } });
      expect(audit.body).toContain('PUT /portal-access/mailboxes/:address');
    });

    it.skipIf(!available)('a password change: policy checked, old password and other sessions end, IMAP/POP kicked, audited with the mailbox as actor', async () => {
      const one = await portalSignIn(t.app, BOB, pw.bob);
      const two = await portalSignIn(t.app, BOB, pw.bob);
      expect((await one.call('POST', 'password', { current_password: pw.bob, new_password: 'short' })).statusCode).toBe(400);
      kicked.length = 0;
      expect((await one.call('POST', 'password', { current_password: pw.bob, new_password: 'bob-new-password' })).statusCode).toBe(204);
      expect(kicked).toEqual([BOB]);
      expect((await one.call('GET', 'me')).statusCode).toBe(200);
      expect((await two.call('GET', 'me')).statusCode).toBe(401);
      expect((await signInRequest(t.app, { address: BOB, password: pw.bob }, '10.5.0.1')).statusCode).toBe(401);
      expect((await t.ctx.mailAuth.check({ user: BOB, password: 'bob-new-password', protocol: 'imap', remoteIp: '127.0.0.1' })).ok).toBe(true);
      const audit = await t.app.inject({ method: 'GET', url: '/admin/audit?limit=200', headers: { authorization: t.basic() } });
      const items = audit.json<{ items: { actor: string; action: string; summary: Record<string, unknown> }[] }>().items;
      const change = items.find((i) => i.action === 'portal: change password');
      expect(change?.actor).toBe(BOB);
      expect(audit.body).not.toContain('bob-new-password');
      expect(items.filter((i) => i.actor === ALICE).map((i) => i.action)).toEqual(expect.arrayContaining(['portal: set forwarding', 'portal: set out-of-office reply', 'portal: create app password']));
      pw.bob = 'bob-new-password';
    });

    it.skipIf(!available)('TOTP of the mailbox: enrolled and confirmed, sign-in needs the code, a code is taken once', async () => {
      const bob = await portalSignIn(t.app, BOB, pw.bob);
      const { secret } = (await bob.call('POST', 'totp')).json<{ secret: string }>();
      expect((await bob.call('POST', 'totp/confirm', { code: oathtoolCode(secret) })).statusCode).toBe(204);
      expect((await signInRequest(t.app, { address: BOB, password: pw.bob }, '10.6.0.1')).statusCode).toBe(401);
      // The step used to confirm is spent: the next step's code signs in, and only once.
      const next = oathtoolCode(secret, Date.now() + 30_000);
      expect((await signInRequest(t.app, { address: BOB, password: pw.bob, code: next }, '10.6.0.2')).statusCode).toBe(200);
      expect((await signInRequest(t.app, { address: BOB, password: pw.bob, code: next }, '10.6.0.3')).statusCode).toBe(401);
      expect(JSON.stringify(await t.ctx.db.selectFrom('portal_totp').selectAll().execute())).not.toContain(secret);
    });

    it.skipIf(!available)('a deleted mailbox: its portal session ends, its TOTP, rules and switch go in the same transaction', async () => {
      await t.ctx.accounts.create({ address: 'dora@example.org', password: 'dora-mailbox-pw' });
      const dora = await portalSignIn(t.app, 'dora@example.org', 'dora-mailbox-pw');
      expect((await dora.call('PUT', 'forwarding', { to: 'x@example.net', keep_copy: true })).statusCode).toBe(200);
      expect((await dora.call('POST', 'totp')).statusCode).toBe(200);
      await t.app.inject({ method: 'PUT', url: '/portal-access/mailboxes/dora@example.org', headers: { authorization: t.basic(), 'content-type': 'application/json' }, payload: '{"self_service":false}' });
      const id = (await t.ctx.accounts.get('dora@example.org')).id;
      await t.ctx.accounts.delete('dora@example.org');
      expect((await dora.call('GET', 'me')).statusCode).toBe(401);
      for (const table of ['portal_sessions', 'portal_totp', 'portal_mail_rules'] as const) {
        expect(await t.ctx.db.selectFrom(table).selectAll().where('account_id', '=', id).execute(), table).toEqual([]);
      }
      expect((await t.app.inject({ method: 'GET', url: '/portal-access', headers: { authorization: t.basic() } })).json<{ disabled_mailboxes: string[] }>().disabled_mailboxes).toEqual([]);
    });
  });
}

describe('the portal is off by default', () => {
  it('MAILSVC_ENABLE_USER_PORTAL unset: no /portal page and no /portal/api, the administrator\'s switch still there', async () => {
    const db = await createTestDatabase('sqlite');
    const t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
    try {
      expect((await t.app.inject({ method: 'GET', url: '/portal/' })).statusCode).toBe(404);
      expect((await signInRequest(t.app, { address: ALICE, password: 'x' })).statusCode).toBe(404);
      expect((await t.app.inject({ method: 'GET', url: '/portal-access', headers: { authorization: t.basic() } })).statusCode).toBe(200);
    } finally {
      await t.close();
      await db.drop();
    }
  });
});
