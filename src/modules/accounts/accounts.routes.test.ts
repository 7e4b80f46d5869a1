import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';

type Json = Record<string, unknown>;

for (const dialect of DIALECTS) {
  describe(`domains, accounts, aliases and app passwords over HTTP (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    const kicked: string[] = [];
    const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) => call(t, method, url, t.basic(), body);
    beforeEach(async () => {
      if (!available) return;
      kicked.length = 0;
      db = await createTestDatabase(dialect);
      // The kick is recorded here; tests/mail-login.test.ts runs the real doveadm.
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' }, {
        kicker: { kick: async (user) => (kicked.push(user), { kicked: true, detail: 'recorded' }) },
      });
      expect((await api('POST', '/domains', { name: 'Example.org' })).status).toBe(201);
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });
    const addAlice = (extra: Json = {}) => api('POST', '/accounts', { address: 'Alice@Example.org', password: 'alice-primary-pw', ...extra });

    it.skipIf(!available)('domains: create (normalised), list with counts, show, duplicate 409, invalid 400, delete only when empty', async () => {
      expect((await api('POST', '/domains', { name: 'example.org' })).status).toBe(409);
      for (const name of ['localhost', 'bad_domain.org', '-x.org', 'a..b', 'example.123']) {
        expect((await api('POST', '/domains', { name })).status, name).toBe(400);
      }
      await addAlice();
      const list = await api('GET', '/domains');
      expect(list.body).toMatchObject({ total: 1, limit: 50, offset: 0, items: [{ name: 'example.org', active: true, accounts: 1, aliases: 0 }] });
      expect((await api('GET', '/domains/example.org')).body).toMatchObject({ id: 1, name: 'example.org' });
      const refused = await api('DELETE', '/domains/example.org');
      expect(refused.status).toBe(409);
      expect(String(refused.body.detail)).toMatch(/still has accounts/);
      expect((await api('DELETE', '/accounts/alice@example.org')).status).toBe(204);
      expect((await t.app.inject({ method: 'DELETE', url: '/domains/example.org', headers: { authorization: t.basic() } })).statusCode).toBe(204);
      expect((await api('GET', '/domains/example.org')).status).toBe(404);
    });

    it.skipIf(!available)('domains: q finds the names containing a text, on the server, paged and counted; a bad q is 422 naming it', async () => {
      for (const name of ['alpha-one.org', 'beta-one.net', 'gamma.org']) expect((await api('POST', '/domains', { name })).status, name).toBe(201);
      const names = (r: { body: Json }) => (r.body.items as { name: string }[]).map((d) => d.name);
      const one = await api('GET', '/domains?q=ONE');
      expect(one.body).toMatchObject({ total: 2, limit: 50, offset: 0 });
      expect(names(one)).toEqual(['alpha-one.org', 'beta-one.net']);
      expect(names(await api('GET', '/domains?q=.org'))).toEqual(['alpha-one.org', 'example.org', 'gamma.org']);
      const paged = await api('GET', '/domains?q=org&limit=1&offset=1');
      expect(paged.body).toMatchObject({ total: 3, limit: 1, offset: 1 });
      expect(names(paged)).toEqual(['example.org']);
      expect((await api('GET', '/domains?q=nothing-like-it')).body).toMatchObject({ total: 0, items: [] });
      // Empty: every domain.
      expect((await api('GET', '/domains?q=')).body).toMatchObject({ total: 4 });
      for (const q of ['a b', '%', '_', 'ex%25']) {
        const bad = await api('GET', `/domains?q=${encodeURIComponent(q)}`);
        expect(bad.status, q).toBe(422);
        expect(bad.body.errors, q).toEqual([{ path: 'querystring.q', message: expect.stringMatching(/letters, digits, dots and hyphens/) }]);
      }
    });
    it.skipIf(!available)('accounts: q finds the addresses containing a text (a literal _), with the domain filter, paged and counted; a bad q is 422 naming it', async () => {
      for (const address of ['al_ice@example.org', 'alpine@example.org', 'bob@example.org']) expect((await api('POST', '/accounts', { address, password: 'a mailbox password 1' })).status, address).toBe(201);
      // Sorted here: MariaDB's collation orders _ apart from SQLite and PostgreSQL.
      const addresses = (r: { body: Json }) => (r.body.items as { address: string }[]).map((a) => a.address).sort();
      expect(addresses(await api('GET', '/accounts?q=AL'))).toEqual(['al_ice@example.org', 'alpine@example.org']);
      // _ is itself, not "any character".
      expect(addresses(await api('GET', '/accounts?q=l_i'))).toEqual(['al_ice@example.org']);
      const paged = await api('GET', '/accounts?q=al&domain=example.org&limit=1&offset=1');
      expect(paged.body).toMatchObject({ total: 2, limit: 1, offset: 1 });
      expect(addresses(paged)).toHaveLength(1);
      expect((await api('GET', '/accounts?q=nobody-here')).body).toMatchObject({ total: 0, items: [] });
      for (const q of ['a b', '%', 'x%25']) {
        const bad = await api('GET', `/accounts?q=${encodeURIComponent(q)}`);
        expect(bad.status, q).toBe(422);
        expect(bad.body.errors, q).toEqual([{ path: 'querystring.q', message: expect.stringMatching(/part of an address/) }]);
      }
    });


    it.skipIf(!available)('accounts: create with defaults, a Dovecot {ARGON2ID} hash, never returned', async () => {
      const r = await addAlice({ display_name: 'Alice', quota_bytes: 1073741824 });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({
        address: 'alice@example.org', domain: 'example.org', display_name: 'Alice', quota_bytes: 1073741824, active: true, require_app_password: false,
        send_rate_burst: 0, send_rate_per_minute: 0, send_rate_per_hour: 0, send_rate_per_day: 0, send_rate_per_week: 0, send_rate_per_month: 0,
      });
      expect(JSON.stringify(r.body)).not.toMatch(/password_hash|argon|alice-primary-pw/i);
      const row = await t.ctx.db.selectFrom('accounts').selectAll().executeTakeFirstOrThrow();
      expect(row.password_hash).toMatch(/^\{ARGON2ID\}\$argon2id\$v=19\$/);
      expect(t.logs.join('')).not.toContain('alice-primary-pw');
    });

    it.skipIf(!available)('bad account input is a 4xx with a clear detail and writes nothing', async () => {
      await addAlice();
      const cases: [Json, number, RegExp][] = [
        [{ address: 'not-an-address', password: 'long-enough-pw' }, 400, /Invalid address/],
        [{ address: 'bob@unknown.org', password: 'long-enough-pw' }, 400, /Unknown domain unknown\.org/],
        [{ address: 'alice@example.org', password: 'long-enough-pw' }, 409, /already exists/],
        [{ address: 'bob@example.org', password: 'short' }, 400, /too short/],
        [{ address: 'bob@example.org', password: 'long-enough-pw', quota_bytes: -1 }, 422, /quota_bytes/],
        [{ address: 'bob@example.org', password: 'long-enough-pw', send_rate_per_minute: 2_000_000 }, 422, /send_rate_per_minute/],
        [{ address: 'bob@example.org', password: 'long-enough-pw', send_rate_per_hour: 1.5 }, 422, /send_rate_per_hour/],
      ];
      for (const [body, status, detail] of cases) {
        const r = await api('POST', '/accounts', body);
        expect(r.status, JSON.stringify(body)).toBe(status);
        expect(String(r.body.detail)).toMatch(detail);
      }
      expect((await api('GET', '/accounts')).body.total).toBe(1);
    });

    it.skipIf(!available)('PATCH changes fields including send limits (0 inherits), a new password or deactivation kicks the sessions', async () => {
      const id = Number((await addAlice()).body.id);
      const r = await api('PATCH', `/accounts/${id}`, { display_name: 'A.', send_rate_per_minute: 5, require_app_password: true });
      expect(r.body).toMatchObject({ display_name: 'A.', send_rate_per_minute: 5, require_app_password: true });
      expect(kicked).toEqual([]);
      await api('PATCH', `/accounts/${id}`, { password: 'a-new-primary-pw' });
      expect(kicked).toEqual(['alice@example.org']);
      await api('PATCH', `/accounts/${id}`, { active: false });
      expect(kicked).toEqual(['alice@example.org', 'alice@example.org']);
      expect((await api('PATCH', `/accounts/${id}`, { quota_bytes: -5 })).status).toBe(422);
      expect((await api('PATCH', '/accounts/999', { display_name: 'x' })).status).toBe(404);
    });

    it.skipIf(!available)('list is paged and filtered by domain', async () => {
      await api('POST', '/domains', { name: 'other.net' });
      for (const a of ['a@example.org', 'b@example.org', 'c@example.org', 'z@other.net']) {
        expect((await api('POST', '/accounts', { address: a, password: 'long-enough-pw' })).status).toBe(201);
      }
      const page = await api('GET', '/accounts?domain=example.org&limit=2&offset=1');
      expect(page.body).toMatchObject({ total: 3, limit: 2, offset: 1 });
      expect((page.body.items as Json[]).map((i) => i.address)).toEqual(['b@example.org', 'c@example.org']);
      expect((await api('GET', '/accounts?limit=0')).status).toBe(400);
      expect((await api('GET', '/accounts?limit=abc')).status).toBe(422);
      expect((await api('GET', '/accounts?domain=nope.org')).status).toBe(404);
    });

    it.skipIf(!available)('app passwords: the secret once, keyed hash at rest, list without secrets, revoke kicks', async () => {
      await addAlice();
      const created = await api('POST', '/accounts/alice@example.org/app-passwords', { name: 'Thunderbird', expires_at: '2099-01-01T00:00:00Z' });
      expect(created.status).toBe(201);
      const password = String(created.body.password);
      expect(password).toMatch(/^[a-z2-7]{12}\.[a-z2-7]{32}$/);
      const [id, secret] = password.split('.');
      expect(created.body).toMatchObject({ id, name: 'Thunderbird', expires_at: '2099-01-01T00:00:00.000Z', last_used_at: null, active: true });
      const row = await t.ctx.db.selectFrom('mailbox_app_passwords').selectAll().executeTakeFirstOrThrow();
      expect(JSON.stringify(row)).not.toContain(secret);
      expect(row.secret_hash).toMatch(/^[0-9a-f]{64}$/);
      const list = await api('GET', '/accounts/alice@example.org/app-passwords');
      expect(JSON.stringify(list.body)).not.toContain(secret);
      expect(list.body).toEqual([expect.objectContaining({ id, name: 'Thunderbird' })]);
      expect((await api('POST', '/accounts/alice@example.org/app-passwords', { name: 'x', expires_at: '2001-01-01T00:00:00Z' })).status).toBe(400);
      expect((await api('POST', '/accounts/alice@example.org/app-passwords', { name: '' })).status).toBe(400);
      expect((await api('POST', '/accounts/alice@example.org/app-passwords', { name: 'x', expires_at: 'Jan 1 2099' })).status).toBe(422);
      expect((await api('DELETE', `/accounts/alice@example.org/app-passwords/${id}`)).status).toBe(204);
      expect(kicked).toEqual(['alice@example.org']);
      expect((await api('DELETE', `/accounts/alice@example.org/app-passwords/${id}`)).status).toBe(404);
      expect((await api('GET', '/accounts/alice@example.org/app-passwords')).body).toEqual([]);
    });

    it.skipIf(!available)('aliases: q finds the aliases whose source or a destination contains a text (a literal _), with the domain filter, paged and counted; a bad q is 422 naming it', async () => {
      expect((await api('POST', '/domains', { name: 'other.net' })).status).toBe(201);
      for (const [source, destinations] of [['sales@example.org', ['bob_x@far.net']], ['info@example.org', ['carol@example.org', 'team@far.net']], ['post@other.net', ['info@example.org']]] as const) {
        expect((await api('POST', '/aliases', { source, destinations })).status, source).toBe(201);
      }
      const sources = (r: { body: Json }) => (r.body.items as { source: string }[]).map((a) => a.source).sort();
      expect(sources(await api('GET', '/aliases?q=FAR.net'))).toEqual(['info@example.org', 'sales@example.org']);
      // The source or a destination: info@example.org is the first's source and the third's destination.
      expect(sources(await api('GET', '/aliases?q=info@'))).toEqual(['info@example.org', 'post@other.net']);
      expect(sources(await api('GET', '/aliases?q=b_x'))).toEqual(['sales@example.org']);
      // _ is itself, not "any character" (which would find ex, es … everywhere).
      expect((await api('GET', '/aliases?q=e_')).body).toMatchObject({ total: 0 });
      expect(sources(await api('GET', '/aliases?q=info@&domain=other.net'))).toEqual(['post@other.net']);
      const paged = await api('GET', '/aliases?q=example.org&limit=1&offset=1');
      expect(paged.body).toMatchObject({ total: 3, limit: 1, offset: 1 });
      expect((await api('GET', '/aliases?q=nobody-here')).body).toMatchObject({ total: 0, items: [] });
      expect((await api('GET', '/aliases?q=')).body).toMatchObject({ total: 3 });
      for (const q of ['a b', '%', 'x%25']) {
        const bad = await api('GET', `/aliases?q=${encodeURIComponent(q)}`);
        expect(bad.status, q).toBe(422);
        expect(bad.body.errors, q).toEqual([{ path: 'querystring.q', message: expect.stringMatching(/part of an address/) }]);
      }
    });

    it.skipIf(!available)('aliases: create, catch-all, duplicates, unknown domain, delete', async () => {
      await addAlice();
      const a = await api('POST', '/aliases', { source: 'Info@Example.org', destinations: ['alice@example.org', 'ext@elsewhere.net'] });
      expect(a.status).toBe(201);
      expect(a.body).toMatchObject({ source: 'info@example.org', destinations: ['alice@example.org', 'ext@elsewhere.net'] });
      expect((await api('POST', '/aliases', { source: '@example.org', destinations: ['alice@example.org'] })).status).toBe(201);
      expect((await api('POST', '/aliases', { source: 'info@example.org', destinations: ['x@y.org'] })).status).toBe(409);
      expect((await api('POST', '/aliases', { source: 'info@unknown.org', destinations: ['x@y.org'] })).status).toBe(400);
      expect((await api('POST', '/aliases', { source: 'x@example.org', destinations: [] })).status).toBe(400);
      expect((await api('GET', '/aliases?domain=example.org')).body.total).toBe(2);
      const row = await t.ctx.db.selectFrom('aliases').select('destination').where('source', '=', 'info@example.org').executeTakeFirstOrThrow();
      expect(row.destination).toBe('alice@example.org,ext@elsewhere.net');
      expect((await api('DELETE', '/aliases/info@example.org')).status).toBe(204);
      expect((await api('GET', '/aliases/info@example.org')).status).toBe(404);
    });
  });
}
