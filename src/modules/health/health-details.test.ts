import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';

/**
 * /health/details?components=false: the status without the daemon probes. An
 * Rspamd controller that never answers makes the full answer wait for the
 * probe's time limit; the short one does not wait for it.
 */
describe('/health/details with and without the component probes', () => {
  let db: TestDatabase;
  let t: TestApp;
  let hanging: Server;
  const LIMIT = 1500;

  beforeAll(async () => {
    hanging = createServer(() => undefined);
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, {
      MAILSVC_MFA_REQUIRED: 'no',
      MAILSVC_RSPAMD_CONTROLLER_URL: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`,
      MAILSVC_PROBE_TIMEOUT_MS: String(LIMIT),
      MAILSVC_HELPER: 'direct',
    });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    hanging.closeAllConnections();
    await new Promise((r) => hanging.close(r));
  });

  it('answers at once, with no components and a status that leaves them out, when asked without them', async () => {
    let started = Date.now();
    const full = await call(t, 'GET', '/health/details', t.basic());
    expect(Date.now() - started).toBeGreaterThanOrEqual(LIMIT - 50);
    expect(full.status).toBe(200);
    expect((full.body.components as Record<string, { status: string; detail: string }>).rspamd).toMatchObject({ status: 'unknown', detail: `no answer within ${LIMIT} ms` });

    started = Date.now();
    const short = await call(t, 'GET', '/health/details?components=false', t.basic());
    expect(Date.now() - started).toBeLessThan(LIMIT - 500);
    expect(short.status).toBe(200);
    // Without the probes the status covers the database, schema, Redis and backups: the full answer's reasons less its components.
    const withoutComponents = (full.body.degraded_by as string[]).filter((r) => !r.startsWith('component '));
    expect(short.body).toMatchObject({ status: withoutComponents.length ? 'degraded' : 'ok', degraded_by: withoutComponents, database: full.body.database, redis: full.body.redis, backups: full.body.backups, components: {} });
  });

  it('refuses another value or parameter (422), never a 5xx', async () => {
    expect((await call(t, 'GET', '/health/details?components=maybe', t.basic())).status).toBe(422);
    expect((await call(t, 'GET', '/health/details?x=1', t.basic())).status).toBe(422);
  });
});
