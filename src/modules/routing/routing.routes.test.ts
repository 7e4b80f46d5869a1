import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';

/** One address is a mailbox or an alias, never both; an alias never closes a loop. Over HTTP, on each dialect. */
for (const dialect of DIALECTS) {
  describe(`mail routing rules over HTTP (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    const api = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) => call(t, method, url, t.basic(), body);
    const account = (address: string) => api('POST', '/accounts', { address, password: 'long-enough-pw' });
    const alias = (source: string, ...destinations: string[]) => api('POST', '/aliases', { source, destinations });
    const counts = async () => ({ accounts: (await api('GET', '/accounts')).body.total, aliases: (await api('GET', '/aliases')).body.total });
    beforeEach(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' }, { kicker: { kick: async () => ({ kicked: true, detail: 'recorded' }) } });
      for (const name of ['example.org', 'example.net']) expect((await api('POST', '/domains', { name })).status).toBe(201);
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('an alias at a mailbox address is 409, and a mailbox at an alias address is 409; nothing is written', async () => {
      expect((await account('alice@example.org')).status).toBe(201);
      const a = await alias('Alice@Example.org', 'bob@example.net');
      expect(a.status).toBe(409);
      expect(String(a.body.detail)).toMatch(/alice@example\.org is a mailbox/);
      expect((await alias('info@example.org', 'alice@example.org')).status).toBe(201);
      const m = await account('INFO@example.org');
      expect(m.status).toBe(409);
      expect(String(m.body.detail)).toMatch(/info@example\.org is an alias.*delete the alias first/);
      expect(await counts()).toEqual({ accounts: 1, aliases: 1 });
      // Once the alias is gone the address is free for a mailbox.
      expect((await api('DELETE', '/aliases/info@example.org')).status).toBe(204);
      expect((await account('info@example.org')).status).toBe(201);
    });

    it.skipIf(!available)('a catch-all alias may sit beside the mailboxes of its domain', async () => {
      expect((await account('alice@example.org')).status).toBe(201);
      expect((await alias('@example.org', 'alice@example.org')).status).toBe(201);
      expect((await account('bob@example.org')).status).toBe(201);
    });

    it.skipIf(!available)('alias loops are 409 naming the loop: two aliases, a longer cycle, and through a catch-all', async () => {
      expect((await alias('a@example.org', 'b@example.net')).status).toBe(201);
      const two = await alias('b@example.net', 'a@example.org');
      expect(two.status).toBe(409);
      expect(two.body.detail).toBe('Alias loop: b@example.net → a@example.org → b@example.net; mail would go round for ever');

      expect((await alias('c@example.org', 'd@example.org', 'outside@elsewhere.test')).status).toBe(201);
      expect((await alias('d@example.org', 'e@example.net')).status).toBe(201);
      const three = await alias('e@example.net', 'x@example.net', 'c@example.org');
      expect(three.status).toBe(409);
      expect(three.body.detail).toMatch(/^Alias loop: e@example\.net → c@example\.org → d@example\.org → e@example\.net;/);

      // @example.net catches b2@example.net, which is no mailbox and no alias: that closes a loop too.
      expect((await alias('f@example.org', 'b2@example.net')).status).toBe(201);
      const catchAll = await alias('@example.net', 'f@example.org');
      expect(catchAll.status).toBe(409);
      expect(catchAll.body.detail).toMatch(/^Alias loop: @example\.net → f@example\.org → b2@example\.net → @example\.net;/);
      // A mailbox ends the chain: with b2 a mailbox, the same catch-all is fine.
      expect((await account('b2@example.net')).status).toBe(201);
      expect((await alias('@example.net', 'f@example.org')).status).toBe(201);
      // A chain that passes through a catch-all back to its start: zz@example.org is caught by @example.org.
      expect((await alias('@example.org', 'm@example.net')).status).toBe(201);
      const via = await alias('m@example.net', 'zz@example.org');
      expect(via.status).toBe(409);
      expect(via.body.detail).toBe('Alias loop: m@example.net → zz@example.org (via @example.org) → m@example.net; mail would go round for ever');
      expect(await counts()).toEqual({ accounts: 1, aliases: 6 });
    });

    it.skipIf(!available)('removing a mailbox or an alias whose address would then fall to a catch-all leading back is 409; nothing changes', async () => {
      expect((await account('alice@example.org')).status).toBe(201);
      expect((await alias('@example.net', 'alice@example.org')).status).toBe(201);
      expect((await alias('@example.org', 'bob@example.net')).status).toBe(201);
      const mailbox = await api('DELETE', '/accounts/alice@example.org');
      expect(mailbox.status).toBe(409);
      expect(mailbox.body.detail).toBe(
        'Removing alice@example.org would make an alias loop: alice@example.org (via @example.org) → bob@example.net (via @example.net) → alice@example.org; mail would go round for ever',
      );
      expect((await api('GET', '/accounts/alice@example.org')).status).toBe(200);

      expect((await alias('info@example.org', 'outside@elsewhere.test')).status).toBe(201);
      expect((await api('DELETE', '/aliases/@example.net')).status).toBe(204);
      expect((await alias('@example.net', 'info@example.org')).status).toBe(201);
      const exact = await api('DELETE', '/aliases/info@example.org');
      expect(exact.status).toBe(409);
      expect(exact.body.detail).toMatch(/^Removing info@example\.org would make an alias loop: info@example\.org \(via @example\.org\) → bob@example\.net/);
      expect((await api('GET', '/aliases/info@example.org')).status).toBe(200);
      // Without a loop both go: the catch-all first, then the rest.
      expect((await api('DELETE', '/aliases/@example.org')).status).toBe(204);
      expect((await api('DELETE', '/aliases/info@example.org')).status).toBe(204);
      expect((await api('DELETE', '/accounts/alice@example.org')).status).toBe(204);
    });

    it.skipIf(!available)('the OpenAPI document lists the 409 of every route these rules can refuse', async () => {
      const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: Record<string, Record<string, { responses: object }>>}>();
      for (const [path, method] of [['/accounts', 'post'], ['/aliases', 'post'], ['/accounts/{id}', 'delete'], ['/aliases/{alias}', 'delete']] as const) {
        expect(Object.keys(doc.paths[path]?.[method]?.responses ?? {}), `${method} ${path}`).toContain('409');
      }
    });
  });
}
