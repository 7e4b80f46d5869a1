import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { checkPublicHttpsUrl } from './address-policy.js';
import type { Resolver } from './address-policy.js';

// A name that does not resolve passes the save-time check (the send-time check
// guards it), so odd spellings must be refused before any lookup.
const nothingResolves: Resolver = async (host) => {
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
};

const ODD = ['https://127.0.0.1..', 'https://localhost..', 'https://example.com..', 'https://0x7f.1..', 'https://a..example.com', 'https://.example.com', 'https://example.com...'];

describe('base_url host spellings with empty labels (trailing dots) are refused at save time', () => {
  it('checkPublicHttpsUrl refuses them without a lookup', async () => {
    for (const url of ODD) {
      const r = await checkPublicHttpsUrl(url, { allowHosts: [] }, nothingResolves);
      expect(r, url).toEqual({ ok: false, reason: 'host is not a valid DNS name' });
    }
  });

  it('one trailing dot (a fully qualified name) stays fine', async () => {
    expect((await checkPublicHttpsUrl('https://sms.example.com./api', { allowHosts: [] }, nothingResolves)).ok).toBe(true);
  });

  describe('through PUT /auth/mfa/providers', () => {
    let db: TestDatabase;
    let t: TestApp;
    beforeAll(async () => {
      db = await createTestDatabase('sqlite');
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
    });
    afterAll(async () => {
      await t?.close();
      await db?.drop();
    });
    it('400 "Invalid base_url: host is not a valid DNS name", nothing stored', async () => {
      for (const base_url of ODD) {
        const r = await t.app.inject({ method: 'PUT', url: '/auth/mfa/providers', headers: { authorization: t.basic() }, payload: { code: 'provider_a', base_url } });
        expect(r.statusCode, base_url).toBe(400);
        expect(r.json()).toEqual({ detail: 'Invalid base_url: host is not a valid DNS name' });
      }
      expect(await t.ctx.db.selectFrom('sms_providers').selectAll().execute()).toHaveLength(0);
    });
  });
});
