import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIALECTS, createTestDatabase, dialectAvailable } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { FakeClock, startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { call } from './helpers/flows.js';
import { runCli } from './helpers/cli.js';

/**
 * `sort` on the list routes of domains, accounts, aliases and the audit log,
 * ordered by the database on each dialect: ascending and descending, ties
 * broken by the list's key so that pages never overlap or skip, and an
 * unknown field refused with 422 naming `sort`. (Bans: src/modules/bans;
 * the queue: src/modules/queue.) Names are plain lowercase letters so every
 * dialect's collation orders them alike.
 */
type Json = Record<string, unknown>;
const GIB = 1024 ** 3;

for (const dialect of DIALECTS) {
  describe(`sort on the list routes (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    const clock = new FakeClock(Date.parse('2026-05-01T10:00:00Z'));
    const api = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) => call(t, method, url, t.basic(), body);
    const get = async (url: string): Promise<Json> => {
      const r = await api('GET', url);
      expect(r.status, `${url}: ${JSON.stringify(r.body)}`).toBe(200);
      return r.body;
    };
    const field = (name: string) => async (url: string): Promise<unknown[]> => ((await get(url)).items as Json[]).map((i) => i[name]);
    const names = field('name');
    /** Every item of a list walked one page of `size` at a time. */
    const walk = async (url: string, key: string, size: number): Promise<unknown[]> => {
      const all: unknown[] = [];
      for (let offset = 0; ; offset += size) {
        const page = await get(`${url}${url.includes('?') ? '&' : '?'}limit=${size}&offset=${offset}`);
        all.push(...(page.items as Json[]).map((i) => i[key]));
        if (offset + size >= Number(page.total)) return all;
      }
    };

    beforeAll(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' }, { clock });
      // Created a second apart in this order; alpha and charlie switched off.
      for (const name of ['delta.test', 'alpha.test', 'charlie.test', 'bravo.test']) {
        expect((await api('POST', '/domains', { name })).status).toBe(201);
        clock.advance(1000);
      }
      for (const name of ['alpha.test', 'charlie.test']) expect((await api('PATCH', `/domains/${name}`, { active: false })).status).toBe(200);
      const accounts: [string, string, number][] = [['bob@alpha.test', 'Walt', GIB], ['amy@alpha.test', 'Yuri', 3 * GIB], ['cat@bravo.test', 'Xena', 2 * GIB]];
      for (const [address, display_name, quota_bytes] of accounts) {
        expect((await api('POST', '/accounts', { address, password: 'a long mailbox password', display_name, quota_bytes })).status).toBe(201);
        clock.advance(1000);
      }
      for (const [source, to] of [['sales@bravo.test', 'cat@bravo.test'], ['info@alpha.test', 'amy@alpha.test'], ['abuse@delta.test', 'bob@alpha.test']] as const) {
        expect((await api('POST', '/aliases', { source, destinations: [to] })).status).toBe(201);
        clock.advance(1000);
      }
    }, 60_000);
    afterAll(async () => {
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('domains: by each field both ways, ties by name; without sort by name as before', async () => {
      const byName = ['alpha.test', 'bravo.test', 'charlie.test', 'delta.test'];
      expect(await names('/domains')).toEqual(byName);
      expect(await names('/domains?sort=name')).toEqual(byName);
      expect(await names('/domains?sort=-name')).toEqual([...byName].reverse());
      expect(await names('/domains?sort=created_at')).toEqual(['delta.test', 'alpha.test', 'charlie.test', 'bravo.test']);
      expect(await names('/domains?sort=-created_at')).toEqual(['bravo.test', 'charlie.test', 'alpha.test', 'delta.test']);
      // Ties (same active, same count) by name, ascending whichever way the field goes.
      expect(await names('/domains?sort=active')).toEqual(['alpha.test', 'charlie.test', 'bravo.test', 'delta.test']);
      expect(await names('/domains?sort=-active')).toEqual(['bravo.test', 'delta.test', 'alpha.test', 'charlie.test']);
      expect(await names('/domains?sort=-accounts')).toEqual(['alpha.test', 'bravo.test', 'charlie.test', 'delta.test']);
      expect(await names('/domains?sort=accounts')).toEqual(['charlie.test', 'delta.test', 'bravo.test', 'alpha.test']);
      expect(await names('/domains?sort=-aliases')).toEqual(['alpha.test', 'bravo.test', 'delta.test', 'charlie.test']);
      // With the filter: only what it keeps, in the order asked.
      const filtered = await get('/domains?q=l&sort=-created_at');
      expect(filtered).toMatchObject({ total: 3 });
      expect((filtered.items as Json[]).map((d) => d.name)).toEqual(['charlie.test', 'alpha.test', 'delta.test']);
    });

    it.skipIf(!available)('accounts and aliases: by each field both ways, ties by address / source', async () => {
      const addresses = field('address');
      expect(await addresses('/accounts')).toEqual(['amy@alpha.test', 'bob@alpha.test', 'cat@bravo.test']);
      expect(await addresses('/accounts?sort=-address')).toEqual(['cat@bravo.test', 'bob@alpha.test', 'amy@alpha.test']);
      expect(await addresses('/accounts?sort=quota_bytes')).toEqual(['bob@alpha.test', 'cat@bravo.test', 'amy@alpha.test']);
      expect(await addresses('/accounts?sort=-quota_bytes')).toEqual(['amy@alpha.test', 'cat@bravo.test', 'bob@alpha.test']);
      expect(await addresses('/accounts?sort=display_name')).toEqual(['bob@alpha.test', 'cat@bravo.test', 'amy@alpha.test']);
      expect(await addresses('/accounts?sort=-created_at')).toEqual(['cat@bravo.test', 'amy@alpha.test', 'bob@alpha.test']);
      expect(await addresses('/accounts?sort=-created_at&domain=alpha.test')).toEqual(['amy@alpha.test', 'bob@alpha.test']);
      const sources = field('source');
      expect(await sources('/aliases')).toEqual(['abuse@delta.test', 'info@alpha.test', 'sales@bravo.test']);
      expect(await sources('/aliases?sort=-source')).toEqual(['sales@bravo.test', 'info@alpha.test', 'abuse@delta.test']);
      expect(await sources('/aliases?sort=domain')).toEqual(['info@alpha.test', 'sales@bravo.test', 'abuse@delta.test']);
      expect(await sources('/aliases?sort=-domain')).toEqual(['abuse@delta.test', 'sales@bravo.test', 'info@alpha.test']);
      expect(await sources('/aliases?sort=created_at')).toEqual(['sales@bravo.test', 'info@alpha.test', 'abuse@delta.test']);
    });

    it.skipIf(!available)('the audit log: newest first by default, oldest first with sort=at, a field with the newest first among equals', async () => {
      const all = (await get('/admin/audit?limit=500')).items as Json[];
      expect(all.length).toBeGreaterThanOrEqual(12);
      const ids = all.map((e) => Number(e.id));
      expect(ids).toEqual([...ids].sort((a, b) => b - a));
      expect(((await get('/admin/audit?limit=500&sort=-at')).items as Json[]).map((e) => e.id)).toEqual(all.map((e) => e.id));
      expect(((await get('/admin/audit?limit=500&sort=at')).items as Json[]).map((e) => e.id)).toEqual([...all].reverse().map((e) => e.id));
      // The actions in this order on every dialect's collation; within one action the newest first.
      const rank = ['PATCH /domains/:domain', 'POST /accounts', 'POST /aliases', 'POST /domains'];
      const expected = (desc: boolean) =>
        [...all].sort((a, b) => (rank.indexOf(String(a.action)) - rank.indexOf(String(b.action))) * (desc ? -1 : 1) || Number(b.id) - Number(a.id)).map((e) => e.id);
      const byAction = (await get('/admin/audit?limit=500&sort=action')).items as Json[];
      expect(new Set(byAction.map((e) => e.action))).toEqual(new Set(rank));
      expect(byAction.map((e) => e.id)).toEqual(expected(false));
      expect(((await get('/admin/audit?limit=500&sort=-action')).items as Json[]).map((e) => e.id)).toEqual(expected(true));
      // Filters still apply; actor is exact.
      expect((await get('/admin/audit?actor=admin&limit=500')).total).toBe(all.length);
      expect((await get('/admin/audit?actor=adm')).total).toBe(0);
      const long = await api('GET', `/admin/audit?actor=${'x'.repeat(256)}`);
      expect(long.status).toBe(422);
      expect(long.body.errors).toEqual([{ path: 'querystring.actor', message: expect.stringMatching(/256|255/) }]);
      const posts = (await get('/admin/audit?action=POST%20%2Fdomains&sort=at')).items as Json[];
      expect(posts.map((e) => e.target)).toEqual(['delta.test', 'alpha.test', 'charlie.test', 'bravo.test']);
    });

    it.skipIf(!available)('paging is stable: one page at a time gives the whole list once, in the same order, whatever the sort', async () => {
      for (const sort of ['', 'active', '-active', 'accounts', '-aliases', 'created_at', '-name']) {
        const url = sort ? `/domains?sort=${sort}` : '/domains';
        expect(await walk(url, 'name', 1), sort).toEqual(await names(url));
      }
      for (const sort of ['display_name', '-quota_bytes', 'active']) expect(await walk(`/accounts?sort=${sort}`, 'address', 2), sort).toEqual(await field('address')(`/accounts?sort=${sort}`));
      for (const sort of ['active', '-domain']) expect(await walk(`/aliases?sort=${sort}`, 'source', 1), sort).toEqual(await field('source')(`/aliases?sort=${sort}`));
      // Many records share one millisecond (the clock stands still between calls): ties by id.
      for (const sort of ['', 'at', 'result', '-actor', 'source']) {
        const url = sort ? `/admin/audit?sort=${sort}` : '/admin/audit';
        const whole = ((await get(`${url}${url.includes('?') ? '&' : '?'}limit=500`)).items as Json[]).map((e) => e.id);
        expect(await walk(url, 'id', 5), sort).toEqual(whole);
      }
    });

    it.skipIf(!available)('an unknown sort is 422 naming sort, on every list route', async () => {
      for (const url of ['/domains', '/accounts', '/aliases', '/admin/audit']) {
        for (const sort of ['nope', '-', '--name', 'password_hash', 'name desc', 'NAME']) {
          const r = await api('GET', `${url}?sort=${encodeURIComponent(sort)}`);
          expect(r.status, `${url} ${sort}`).toBe(422);
          expect(r.body.errors, `${url} ${sort}`).toEqual([{ path: 'querystring.sort', message: expect.stringMatching(/^must be one of /) }]);
        }
      }
    });
  });
}

describe('--sort on the list commands (the built CLI, SQLite)', () => {
  let dataDir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-sort-cli-'));
    env = { MAILSVC_DATA_DIR: dataDir, MAILSVC_ADMIN_PASSWORD: 'x-unused-password' };
    expect((await runCli(['db', 'migrate'], { env })).code).toBe(0);
    for (const name of ['bravo.test', 'alpha.test', 'charlie.test']) expect((await runCli(['add', 'domain', name], { env })).code).toBe(0);
  }, 60_000);
  afterAll(() => {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('passes the same values as the route: -<field> descending, an unknown field exit 2 naming the choices', async () => {
    const list = async (...args: string[]) => {
      const r = await runCli(['domains', 'list', '--json', ...args], { env });
      expect(r.code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { items: { name: string }[] }).items.map((d) => d.name);
    };
    expect(await list()).toEqual(['alpha.test', 'bravo.test', 'charlie.test']);
    expect(await list('--sort=-name')).toEqual(['charlie.test', 'bravo.test', 'alpha.test']);
    expect(await list('--sort', '-name')).toEqual(['charlie.test', 'bravo.test', 'alpha.test']);
    expect(await list('--sort', 'created_at')).toEqual(['bravo.test', 'alpha.test', 'charlie.test']);
    const bad = await runCli(['domains', 'list', '--sort', 'nope'], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^mailsvc: sort: must be one of name, -name, active, -active, accounts, -accounts, aliases, -aliases, created_at, -created_at\n$/);
    const audit = await runCli(['audit', 'list', '--json', '--sort', 'at'], { env });
    expect(audit.code, audit.stderr).toBe(0);
    const targets = (JSON.parse(audit.stdout) as { action: string; target: string }[]).filter((e) => e.action === 'cli: add domain').map((e) => e.target);
    expect(targets).toEqual(['bravo.test', 'alpha.test', 'charlie.test']);
  });
});
