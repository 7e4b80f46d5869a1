import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';
import { runCli } from '../../../test/helpers/cli.js';
import { fail2banUnavailable, startFail2ban } from '../../../test/helpers/fail2ban-server.js';
import type { Fail2banServer } from '../../../test/helpers/fail2ban-server.js';

const noF2b = fail2banUnavailable() !== null;
const banned = async (f: Fail2banServer, ip: string): Promise<string> => (await f.client('banned', ip)).trim();

for (const dialect of DIALECTS) {
  describe.skipIf(noF2b)(`bans over HTTP on a real fail2ban server (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    let f2b: Fail2banServer;
    const api = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) => call(t, method, url, t.basic(), body);

    beforeAll(async () => {
      if (!available) return;
      f2b = await startFail2ban(['sshd', 'dovecot'], { bantime: 600 });
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', ...f2b.env });
    }, 90_000);
    afterAll(async () => {
      await t?.close();
      await db?.drop();
      await f2b?.stop();
    });

    it.skipIf(!available)('ban adds the address to every active jail, keeps the reason, and list merges the jails', async () => {
      const r = await api('POST', '/admin/bans', { ip: '203.0.113.5', reason: 'brute force on IMAP' });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expect(r.body).toMatchObject({ ip: '203.0.113.5', jails: ['dovecot', 'sshd'], reason: 'brute force on IMAP' });
      expect(await banned(f2b, '203.0.113.5')).toBe("[['sshd', 'dovecot']]");
      const since = Date.parse(String(r.body.banned_at));
      expect(Math.abs(since - Date.now())).toBeLessThan(60_000);
      // The jails record the ban a moment apart: from the first start to the last end.
      const span = Date.parse(String(r.body.expires_at)) - since;
      expect(span).toBeGreaterThanOrEqual(600_000);
      expect(span).toBeLessThanOrEqual(603_000);
      const row = await t.ctx.db.selectFrom('bans').selectAll().executeTakeFirstOrThrow();
      expect(row).toMatchObject({ ip: '203.0.113.5', reason: 'brute force on IMAP' });
      // The audit record names the banned address as its target (the path names none).
      const deadline = Date.now() + 20_000;
      let audit: { target: string | null } | undefined;
      while (!audit && Date.now() < deadline) {
        audit = await t.ctx.db.selectFrom('audit_log').select(['target']).where('action', 'like', '%/admin/bans%').executeTakeFirst();
        if (!audit) await new Promise((res) => setTimeout(res, 100));
      }
      expect(audit?.target).toBe('203.0.113.5');
    });

    it.skipIf(!available)("a ban fail2ban made itself is listed with reason null and only its jail; networks are canonical", async () => {
      await f2b.client('set', 'sshd', 'banip', '198.51.100.7');
      expect((await api('POST', '/admin/bans', { ip: '2001:DB8:1:0::/64', reason: 'spam run' })).status).toBe(201);
      const list = await api('GET', '/admin/bans');
      expect(list.status).toBe(200);
      expect(list.body).toMatchObject({ total: 3, offset: 0 });
      const items = list.body.items as Record<string, unknown>[];
      expect(items.map((b) => b.ip)).toEqual(['198.51.100.7', '203.0.113.5', '2001:db8:1::/64']);
      expect(items[0]).toMatchObject({ jails: ['sshd'], reason: null });
      expect(items[2]).toMatchObject({ jails: ['dovecot', 'sshd'], reason: 'spam run' });
    });

    it.skipIf(!available)('sort: by address both ways, by the ban times (ties by address), pages stably; an unknown sort is 422', async () => {
      type Ban = { ip: string; banned_at: string | null; expires_at: string | null };
      const list = async (query: string): Promise<Ban[]> => {
        const r = await api('GET', `/admin/bans${query}`);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        return r.body.items as Ban[];
      };
      const ips = async (query: string) => (await list(query)).map((b) => b.ip);
      // A ban a second after every other one, so that it is the latest.
      const latest = Math.max(...(await list('')).map((b) => Date.parse(String(b.banned_at))));
      await expect.poll(() => Date.now(), { timeout: 5000, interval: 100 }).toBeGreaterThan(latest + 1000);
      await f2b.client('set', 'dovecot', 'banip', '198.51.100.99');
      try {
        expect(await ips('')).toEqual(['198.51.100.7', '198.51.100.99', '203.0.113.5', '2001:db8:1::/64']);
        expect(await ips('?sort=ip')).toEqual(['198.51.100.7', '198.51.100.99', '203.0.113.5', '2001:db8:1::/64']);
        expect(await ips('?sort=-ip')).toEqual(['2001:db8:1::/64', '203.0.113.5', '198.51.100.99', '198.51.100.7']);
        const all = await list('');
        const order = all.map((b) => b.ip);
        const time = (b: Ban, k: 'banned_at' | 'expires_at') => (b[k] === null ? Infinity : Date.parse(String(b[k])));
        for (const k of ['banned_at', 'expires_at'] as const) {
          const asc = [...all].sort((a, b) => (time(a, k) === time(b, k) ? order.indexOf(a.ip) - order.indexOf(b.ip) : time(a, k) < time(b, k) ? -1 : 1)).map((b) => b.ip);
          const desc = [...all].sort((a, b) => (time(a, k) === time(b, k) ? order.indexOf(a.ip) - order.indexOf(b.ip) : time(a, k) > time(b, k) ? -1 : 1)).map((b) => b.ip);
          expect(await ips(`?sort=${k}`), k).toEqual(asc);
          expect(await ips(`?sort=-${k}`), k).toEqual(desc);
        }
        expect((await ips('?sort=-banned_at'))[0]).toBe('198.51.100.99');
        expect((await ips('?sort=banned_at')).at(-1)).toBe('198.51.100.99');
        const walked: string[] = [];
        for (let offset = 0; offset < 4; offset += 1) walked.push(...(await ips(`?sort=-banned_at&limit=1&offset=${offset}`)));
        expect(walked).toEqual(await ips('?sort=-banned_at'));
        for (const sort of ['reason', 'nope', '--ip']) {
          const bad = await api('GET', `/admin/bans?sort=${sort}`);
          expect(bad.status, sort).toBe(422);
          expect(bad.body.errors).toEqual([{ path: 'querystring.sort', message: 'must be one of ip, -ip, banned_at, -banned_at, expires_at, -expires_at' }]);
        }
      } finally {
        await f2b.client('set', 'dovecot', 'unbanip', '198.51.100.99');
      }
    });

    it.skipIf(!available)('q keeps the addresses containing a text, jail the bans one jail holds (every jail still named); bad values are 422 naming them', async () => {
      const ips = async (query: string) => {
        const r = await api('GET', `/admin/bans${query}`);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        return r.body as { items: { ip: string; jails: string[] }[]; total: number };
      };
      expect((await ips('?q=203.0')).items.map((b) => b.ip)).toEqual(['203.0.113.5']);
      expect((await ips('?q=DB8')).items.map((b) => b.ip)).toEqual(['2001:db8:1::/64']);
      expect((await ips('?q=1')).total).toBe(3);
      const sshd = await ips('?jail=sshd');
      expect(sshd.items.map((b) => b.ip)).toEqual(['198.51.100.7', '203.0.113.5', '2001:db8:1::/64']);
      const dovecot = await ips('?jail=dovecot&sort=-ip');
      expect(dovecot.items).toMatchObject([{ ip: '2001:db8:1::/64', jails: ['dovecot', 'sshd'] }, { ip: '203.0.113.5', jails: ['dovecot', 'sshd'] }]);
      expect(dovecot.total).toBe(2);
      expect(await ips('?jail=dovecot&q=198.51')).toMatchObject({ total: 0, items: [] });
      expect((await ips('?jail=postfix')).total).toBe(0);
      for (const [query, field] of [['q=203.0.113.5%25', 'q'], ['q=g', 'q'], ['jail=ss%20hd', 'jail'], ['jail=a%3Bb', 'jail']] as const) {
        const bad = await api('GET', `/admin/bans?${query}`);
        expect(bad.status, query).toBe(422);
        expect(bad.body.errors, query).toEqual([{ path: `querystring.${field}`, message: expect.any(String) }]);
      }
    });

    it.skipIf(!available)('bad input is 422 naming the field, and nothing is banned', async () => {
      const cases: [unknown, string][] = [
        [{ ip: '203.0.112.0/23', reason: 'x' }, 'ip'],
        [{ ip: '2001:db8::/63', reason: 'x' }, 'ip'],
        [{ ip: '203.0.113.7/24', reason: 'x' }, 'ip'],
        [{ ip: 'example.org', reason: 'x' }, 'ip'],
        [{ ip: '-h', reason: 'x' }, 'ip'],
        [{ ip: '203.0.113.9', reason: '' }, 'reason'],
        [{ ip: '203.0.113.9', reason: 'two\nlines' }, 'reason'],
      ];
      for (const [body, field] of cases) {
        const r = await api('POST', '/admin/bans', body);
        expect(r.status, JSON.stringify(body)).toBe(422);
        expect(JSON.stringify(r.body)).toContain(field);
      }
      for (const ip of ['203.0.112.0/23', '203.0.113.9', '203.0.113.0/24']) expect(await banned(f2b, ip)).toBe('[[]]');
      expect((await api('GET', '/admin/bans')).body.total).toBe(3);
    });

    it.skipIf(!available)('unban lifts the ban in every jail, fail2ban confirms, and a second unban is 404', async () => {
      expect((await api('DELETE', '/admin/bans/203.0.113.5')).status).toBe(204);
      expect(await banned(f2b, '203.0.113.5')).toBe('[[]]');
      expect(await t.ctx.db.selectFrom('bans').select('ip').where('ip', '=', '203.0.113.5').execute()).toEqual([]);
      const again = await api('DELETE', '/admin/bans/203.0.113.5');
      expect(again.status).toBe(404);
      expect(String(again.body.detail)).toMatch(/no jail bans 203\.0\.113\.5/);
      expect((await api('DELETE', `/admin/bans/${encodeURIComponent('2001:db8:1::/64')}`)).status).toBe(204);
      expect(await banned(f2b, '2001:db8:1::/64')).toBe('[[]]');
      expect((await api('DELETE', '/admin/bans/not-an-ip')).status).toBe(422);
    });

    it.skipIf(!available)('a fail2ban that does not answer is 503 with a clear detail', async () => {
      await f2b.client('stop');
      const r = await api('GET', '/admin/bans');
      expect(r.status).toBe(503);
      expect(r.headers['retry-after']).toBe('30');
      expect(String(r.body.detail)).toMatch(/^fail2ban is not running \((no socket at|it does not answer on) .*f2b\.sock\): start it with systemctl start fail2ban/);
    });
  });
}

describe.skipIf(noF2b)('mailsvc bans list|ban|unban (the built CLI, on a real fail2ban server)', () => {
  let f2b: Fail2banServer;
  let dataDir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    f2b = await startFail2ban(['sshd', 'postfix'], { bantime: 3600 });
    dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-bans-cli-'));
    env = { MAILSVC_DATA_DIR: dataDir, MAILSVC_ADMIN_PASSWORD: 'x-unused-password', ...f2b.env };
    expect((await runCli(['db', 'migrate'], { env })).code).toBe(0);
  }, 90_000);
  afterAll(async () => {
    await f2b?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('ban, list --json (an array), unban, and exit 4 / exit 2 with one line', async () => {
    const ban = await runCli(['bans', 'ban', '198.18.7.0/24', 'scanner network', '--json'], { env });
    expect(ban.code, ban.stderr).toBe(0);
    expect(JSON.parse(ban.stdout)).toMatchObject({ ip: '198.18.7.0/24', jails: ['postfix', 'sshd'], reason: 'scanner network' });
    expect(await banned(f2b, '198.18.7.0/24')).toBe("[['sshd', 'postfix']]");

    const list = await runCli(['bans', 'list', '--json'], { env });
    expect(list.code).toBe(0);
    const items = JSON.parse(list.stdout) as Record<string, unknown>[];
    expect(items).toHaveLength(1);
    const span = Date.parse(String(items[0]?.expires_at)) - Date.parse(String(items[0]?.banned_at));
    expect(span).toBeGreaterThanOrEqual(3_600_000);
    expect(span).toBeLessThanOrEqual(3_603_000);
    const human = await runCli(['bans', 'list'], { env });
    expect(human.stdout).toMatch(/198\.18\.7\.0\/24\s+postfix,sshd\s+scanner network/);

    const unban = await runCli(['bans', 'unban', '198.18.7.0/24'], { env });
    expect(unban.code, unban.stderr).toBe(0);
    expect(unban.stdout).toContain('Unbanned 198.18.7.0/24 in postfix, sshd.');
    expect(await banned(f2b, '198.18.7.0/24')).toBe('[[]]');

    const missing = await runCli(['bans', 'unban', '198.18.7.0/24'], { env });
    expect(missing.code).toBe(4);
    expect(missing.stderr).toBe('mailsvc: no jail bans 198.18.7.0/24\n');
    const bad = await runCli(['bans', 'ban', '10.0.0.0/8', 'too wide'], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^mailsvc: ip: a ban may name a network no wider than \/24 for IPv4\n$/);
    expect(await banned(f2b, '10.0.0.0/8')).toBe('[[]]');
  });
});
