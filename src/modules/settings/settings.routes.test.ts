import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';

/** GET/PATCH /admin/settings on every dialect: the channel stored over MAILSVC_UPDATE_CHANNEL, 422 changes nothing, audited. */
for (const dialect of DIALECTS) {
  describe(`/admin/settings (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    beforeEach(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_UPDATE_CHANNEL: 'nightly', MAILSVC_UPDATE_CHECK_URL_STABLE: 'https://feeds.example.org/mailsvc/stable/' });
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('GET answers the channel from MAILSVC_UPDATE_CHANNEL until one is stored, then the stored one', async () => {
      const r = await call(t, 'GET', '/admin/settings', t.basic());
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ update_channel: 'nightly', update_channel_source: 'default', auto_updates: false, update_feeds: { stable: 'https://feeds.example.org/mailsvc/stable' } });
      const p = await call(t, 'PATCH', '/admin/settings', t.basic(), { update_channel: 'stable', auto_updates: true });
      expect(p.status).toBe(200);
      expect(p.body).toMatchObject({ update_channel: 'stable', update_channel_source: 'stored', auto_updates: true });
      const rows = await t.ctx.db.selectFrom('service_settings').select(['key', 'value']).orderBy('key').execute();
      expect(rows).toEqual([{ key: 'auto_updates', value: 'yes' }, { key: 'update_channel', value: 'stable' }]);
      expect((await call(t, 'GET', '/admin/settings', t.basic())).body).toMatchObject({ update_channel: 'stable' });
      const audit = await call(t, 'GET', '/admin/audit', t.basic());
      expect(JSON.stringify(audit.body)).toMatch(/PATCH \/admin\/settings|settings/);
    });

    it.skipIf(!available)('a bad channel, an unknown field or an empty body is 422 and nothing is stored', async () => {
      for (const body of [{ update_channel: 'beta' }, { update_channel: 'stable', colour: 'red' }, {}, { auto_updates: 'maybe' }]) {
        const r = await call(t, 'PATCH', '/admin/settings', t.basic(), body);
        expect(r.status, JSON.stringify(body)).toBe(422);
      }
      // An enum's error names the allowed values once, as the CLI does (not one "must be equal to constant" per value).
      const beta = await call(t, 'PATCH', '/admin/settings', t.basic(), { update_channel: 'beta' });
      expect(beta.body).toEqual({ detail: 'Invalid request: body.update_channel must be one of stable, nightly', errors: [{ path: 'body.update_channel', message: 'must be one of stable, nightly' }] });
      expect(await t.ctx.db.selectFrom('service_settings').selectAll().execute()).toEqual([]);
    });

    it.skipIf(!available)('check-update in a checkout says it has no release key (503), and apply-update refuses the same way', async () => {
      const c = await call(t, 'POST', '/admin/settings/check-update', t.basic());
      expect(c.status).toBe(503);
      expect(String(c.body.detail)).toMatch(/no release public key .*updates with git/);
      const a = await call(t, 'POST', '/admin/settings/apply-update', t.basic(), {});
      expect(a.status).toBe(503);
    });
  });
}
