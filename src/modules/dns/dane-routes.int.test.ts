import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { call } from '../../../test/helpers/flows.js';

/**
 * GET /dns/dane, GET /dns/dane/{host}, POST /dns/dane/{host}/advance:
 * the state as the service keeps it, 404 for an unknown host, 400 for a
 * name that is not one, nothing changed by either. (DNS: a closed port, so a
 * key change waits for visibility; the ordering itself is dane.int.test.ts's.)
 */
describe('DANE routes', () => {
  let db: TestDatabase;
  let t: TestApp;
  const A = 'a'.repeat(64);
  const B = 'b'.repeat(64);

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_DNS_RESOLVER: '127.0.0.1:9', MAILSVC_DNS_AUTHORITATIVE: '127.0.0.1:9' });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('lists, shows and advances; an unknown host is 404 and a bad name 400', async () => {
    expect((await call(t, 'GET', '/dns/dane', t.basic())).body).toEqual([]);
    expect((await call(t, 'GET', '/dns/dane/mail.example.test', t.basic())).status).toBe(404);
    expect((await call(t, 'POST', '/dns/dane/mail.example.test/advance', t.basic())).status).toBe(404);
    const bad = await call(t, 'GET', `/dns/dane/${encodeURIComponent('not a host')}`, t.basic());
    expect(bad.status).toBe(400);
    const dane = (await t.ctx.modules.get('dns')).dane;
    await dane.setCurrent('mail.example.test', A);
    await dane.prepareKeyChange('mail.example.test', B);
    const one = await call(t, 'GET', '/dns/dane/MAIL.example.test', t.basic());
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ mail_host: 'mail.example.test', state: 'awaiting-visibility', current_spki: A, next_spki: B, records: [`3 1 1 ${A}`, `3 1 1 ${B}`], deploy_allowed: false });
    const adv = await call(t, 'POST', '/dns/dane/mail.example.test/advance', t.basic());
    expect(adv.status).toBe(200);
    // Advancing asks the authoritative servers and says what is missing.
    expect(adv.body).toMatchObject({ state: 'awaiting-visibility', deploy_allowed: false, waiting: expect.stringMatching(/127\.0\.0\.1:9 does not answer/) });
    expect((await call(t, 'GET', '/dns/dane', t.basic())).body).toEqual([expect.objectContaining({ mail_host: 'mail.example.test', state: 'awaiting-visibility' })]);
    expect((await t.app.inject({ method: 'GET', url: '/dns/dane' })).statusCode).toBe(401);
  }, 60_000);
});
