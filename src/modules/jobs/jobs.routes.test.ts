import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';

for (const dialect of DIALECTS) {
  describe(`jobs over HTTP (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    beforeEach(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
    });
    const job = async (id: string) => call(t, 'GET', `/admin/jobs/${id}`, t.basic());

    it.skipIf(!available)('POST /admin/jobs/sample answers 202 {job_id}; GET /admin/jobs/{id} follows it to the end', async () => {
      const started = await call(t, 'POST', '/admin/jobs/sample', t.basic(), { count: 5, step_ms: 5 });
      expect(started.status).toBe(202);
      expect(Object.keys(started.body)).toEqual(['job_id']);
      const id = String(started.body.job_id);
      await expect.poll(async () => (await job(id)).body.state, { timeout: 30_000, interval: 20 }).toBe('succeeded');
      expect(await job(id)).toMatchObject({ status: 200, body: { id, kind: 'sample', state: 'succeeded', progress: 1, message: 'done', result: { counted: 5 } } });
      expect(Object.keys((await job(id)).body).sort()).toEqual(['id', 'kind', 'message', 'progress', 'result', 'state']);
    });

    it.skipIf(!available)('a failing job reads failed with its reason; unknown 404, malformed 422, unauthenticated 401, bad body 422', async () => {
      const started = await call(t, 'POST', '/admin/jobs/sample', t.basic(), { count: 3, step_ms: 1, fail_at: 2 });
      const id = String(started.body.job_id);
      await expect.poll(async () => (await job(id)).body.state, { timeout: 30_000, interval: 20 }).toBe('failed');
      expect((await job(id)).body).toMatchObject({ state: 'failed', message: 'sample job failed at 2 as asked', result: null });
      expect(await job('0123456789abcdef01234567')).toMatchObject({ status: 404, body: { detail: 'No job 0123456789abcdef01234567' } });
      expect((await job('NOT-an-id!')).status).toBe(422);
      expect((await t.app.inject({ method: 'GET', url: `/admin/jobs/${id}` })).statusCode).toBe(401);
      expect((await call(t, 'POST', '/admin/jobs/sample', t.basic(), { count: 0 })).status).toBe(422);
      expect((await call(t, 'POST', '/admin/jobs/sample', t.basic(), { count: 'ten' })).status).toBe(422);
    });
  });
}
