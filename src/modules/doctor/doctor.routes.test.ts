import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock, startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { call } from '../../../test/helpers/flows.js';
import { freePort } from '../../../test/helpers/mail-daemons.js';
import type { DoctorReport } from './schema.js';

/**
 * GET /admin/doctor on the service as `mailsvc serve` builds it: an API key of
 * scope `read` reaches it, the clock is checked against the database through
 * an injected clock, and the policy service and auth hook are the service's
 * own listeners, started and stopped here.
 */
describe('GET /admin/doctor', () => {
  let db: TestDatabase;
  let t: TestApp;
  let clock: FakeClock;
  let dir: string;
  let policyPort: number;
  let hookSocket: string;
  const line = (r: DoctorReport, id: string) => r.checks.find((c) => c.id === id);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-doctor-'));
    policyPort = await freePort();
    hookSocket = join(dir, 'hook.sock');
    db = await createTestDatabase('sqlite');
    clock = new FakeClock(Date.now());
    t = await startTestApp(db.url, {
      MAILSVC_MFA_REQUIRED: 'no', MAILSVC_HELPER: 'direct', MAILSVC_DOCTOR_TLS_PORTS: 'off', MAILSVC_MAIL_STORAGE: dir,
      MAILSVC_POLICY_LISTEN: `127.0.0.1:${policyPort}`, MAILSVC_MAIL_AUTH_SOCKET: hookSocket, MAILSVC_RSPAMD_CONTROLLER_URL: `http://127.0.0.1:${await freePort()}`,
      MAILSVC_DOCTOR_TIMEOUT_MS: '8000',
    }, { clock });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('answers the report to the administrator and to an API key of scope read; every line has an id, a status, a detail and a fix', async () => {
    const key = await (await t.ctx.modules.get('api-keys')).service.create({ name: 'monitor', scopes: ['read'], expires_at: new Date(Date.now() + 86_400_000).toISOString() }, 'admin');
    const res = await call(t, 'GET', '/admin/doctor', `Bearer ${key.key}`);
    expect(res.status).toBe(200);
    const r = res.body as unknown as DoctorReport;
    expect(Object.keys(r)).toEqual(['generated_at', 'status', 'summary', 'counts', 'checks']);
    for (const c of r.checks) {
      expect(Object.keys(c)).toEqual(['id', 'name', 'status', 'detail', 'fix']);
      expect(['ok', 'warn', 'fail', 'unknown']).toContain(c.status);
      if (c.status === 'fail' || c.status === 'warn') expect(c.fix, c.id).toBeTruthy();
    }
    expect(r.checks.map((c) => c.id)).toEqual(expect.arrayContaining(['daemon.database', 'daemon.postfix', 'daemon.helper', 'database.schema', 'config.drift', 'timer.backup', 'backup.last', 'backup.verify', 'dns', 'disk.data', 'socket.policy', 'socket.auth-hook', 'clock']));
    expect(line(r, 'daemon.database')).toMatchObject({ status: 'ok' });
    expect(line(r, 'database.schema')).toMatchObject({ status: 'ok' });
    expect((await call(t, 'GET', '/admin/doctor', 'Bearer nope')).status).toBe(401);
    expect((await call(t, 'GET', '/admin/doctor?x=1', t.basic())).status).toBe(422);
  }, 60_000);

  it('the clock: ok in step, warn over 2 s, fail over 30 s against the database', async () => {
    const doctor = (await t.ctx.modules.get('doctor')).service;
    const clockLine = async () => line(await doctor.run(), 'clock');
    clock.t = Date.now();
    expect(await clockLine()).toMatchObject({ status: 'ok', fix: null });
    clock.t = Date.now() + 5_000;
    expect(await clockLine()).toMatchObject({ status: 'warn', detail: expect.stringMatching(/^this host's clock is [45]\.\d s ahead of the database$/) });
    clock.t = Date.now() - 40_000;
    const late = await clockLine();
    expect(late).toMatchObject({ status: 'fail', detail: expect.stringMatching(/^this host's clock is (39|40)\.\d s behind the database$/), fix: expect.stringMatching(/synchronise the clocks/) });
    clock.t = Date.now();
  }, 60_000);

  it('the policy service and the auth hook: fail while nothing listens, ok once the service\'s own listeners answer', async () => {
    const doctor = (await t.ctx.modules.get('doctor')).service;
    const before = await doctor.run();
    expect(line(before, 'socket.policy')).toMatchObject({ status: 'fail', detail: `nothing listens on 127.0.0.1:${policyPort}`, fix: expect.stringMatching(/systemctl start mailsvc\.service/) });
    expect(line(before, 'socket.auth-hook')).toMatchObject({ status: 'fail', detail: `no socket at unix:${hookSocket}` });
    const policy = await (await t.ctx.modules.get('send-limits')).startPolicyServer({ host: '127.0.0.1', port: policyPort });
    const hook = await (await t.ctx.modules.get('mail-auth')).startHookServer({ socketPath: hookSocket });
    try {
      const after = await doctor.run();
      expect(line(after, 'socket.policy')).toMatchObject({ status: 'ok', detail: `answers on 127.0.0.1:${policyPort}`, fix: null });
      expect(line(after, 'socket.auth-hook')).toMatchObject({ status: 'ok', detail: `answers on unix:${hookSocket}` });
      // The harmless requests signed nobody in and counted nothing: no failed sign-in in the log.
      expect(t.logs.join('')).not.toMatch(/auth.*fail|send rate limit/i);
    } finally {
      await policy.close();
      await hook.close();
    }
  }, 60_000);
});
