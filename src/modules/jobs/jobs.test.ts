import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createDb } from '../../db/database.js';
import type { Db } from '../../db/database.js';
import { migrateToLatest } from '../../app/schema.js';
import { systemClock } from '../../shared/clock.js';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { FakeClock } from '../../../test/helpers/app.js';
import { JobRepository } from './job.repository.js';
import { JobRunner } from './job-runner.js';
import type { RunnerOptions } from './job-runner.js';
import type { Clock } from '../../shared/clock.js';
import { sampleJob } from './sample-job.js';
import type { Job, JobUpdate } from './index.js';

const silent = pino({ level: 'silent' });

/** A handler that reports half-way and then waits to be released. */
function gate() {
  let release = (): void => undefined;
  const released = new Promise<void>((r) => (release = r));
  let reached = (): void => undefined;
  const halfway = new Promise<void>((r) => (reached = r));
  return {
    release,
    halfway,
    handler: async (_input: unknown, ctx: { progress(f: number, m: string): Promise<void> }) => {
      await ctx.progress(0.5, 'half way');
      reached();
      await released;
      return { ok: true };
    },
  };
}

for (const dialect of DIALECTS) {
  describe(`jobs (${dialect})`, { timeout: 30_000 }, async () => {
    const available = await dialectAvailable(dialect);
    let tdb: TestDatabase;
    const dbs: Db[] = [];
    const runners: JobRunner[] = [];
    const open = async (): Promise<Db> => {
      const db = createDb(tdb.url);
      dbs.push(db);
      return db;
    };
    const runner = async (opts: RunnerOptions = {}, clock: Clock = systemClock): Promise<JobRunner> => {
      const r = new JobRunner(new JobRepository(await open()), clock, silent, opts);
      r.register('sample', sampleJob);
      runners.push(r);
      return r;
    };
    const settled = (r: JobRunner, id: string) =>
      expect.poll(async () => (await r.get(id)).state, { timeout: 30_000, interval: 20 }).toMatch(/^(succeeded|failed)$/);
    beforeEach(async () => {
      if (!available) return;
      tdb = await createTestDatabase(dialect);
      await migrateToLatest(await open());
    });
    afterEach(async () => {
      for (const r of runners.splice(0)) await r.stop();
      for (const db of dbs.splice(0)) await db.destroy();
      await tdb?.drop();
    });

    it.skipIf(!available)('lifecycle: queued, then succeeded with progress 1 and the result', async () => {
      const a = await runner();
      const queued = await a.enqueue('sample', { count: 3, step_ms: 1 });
      expect(await a.get(queued)).toEqual({ id: queued, kind: 'sample', state: 'queued', progress: 0, message: 'queued', result: null });
      expect(await a.run(queued)).toBe(true);
      expect(await a.get(queued)).toEqual({ id: queued, kind: 'sample', state: 'succeeded', progress: 1, message: 'done', result: { counted: 3 } });
      const id = await a.start('sample', { count: 5, step_ms: 2 });
      await settled(a, id);
      expect(await a.get(id)).toMatchObject({ state: 'succeeded', result: { counted: 5 } });
      const row = await dbs[0]!.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      expect(row.owner).toBe(a.owner);
      expect(Number(row.finished_at)).toBeGreaterThanOrEqual(Number(row.started_at));
      await expect(a.get('nosuchjob')).rejects.toMatchObject({ code: 'not_found' });
      await expect(a.enqueue('nosuchkind', {})).rejects.toMatchObject({ code: 'bad_request' });
    });

    it.skipIf(!available)('progress: the row shows a running job at its fraction and message; the foreground runner sees every update', async () => {
      const a = await runner();
      const g = gate();
      a.register('gated', g.handler);
      const id = await a.start('gated', null);
      await g.halfway;
      const reader = await runner();
      expect(await reader.get(id)).toEqual({ id, kind: 'gated', state: 'running', progress: 0.5, message: 'half way', result: null });
      g.release();
      await settled(reader, id);
      expect(await reader.get(id)).toMatchObject({ state: 'succeeded', progress: 1, result: { ok: true } });

      const updates: JobUpdate[] = [];
      const job = await a.runHere('sample', { count: 4, step_ms: 1 }, (u) => updates.push(u));
      expect(updates.map((u) => u.progress)).toEqual([0.25, 0.5, 0.75, 1, 1]);
      expect(updates.at(-1)).toEqual({ progress: 1, message: 'done' });
      expect(job).toMatchObject({ state: 'succeeded', result: { counted: 4 } });
    });

    it.skipIf(!available)('a failure is captured: state failed, the error as message, no result', async () => {
      const a = await runner();
      const job = await a.runHere('sample', { count: 5, step_ms: 1, fail_at: 3 }, () => undefined);
      expect(job).toEqual({ id: job.id, kind: 'sample', state: 'failed', progress: 0.4, message: 'sample job failed at 3 as asked', result: null });
      const row = await dbs[0]!.selectFrom('jobs').select(['error', 'finished_at']).where('id', '=', job.id).executeTakeFirstOrThrow();
      expect(row.error).toBe('sample job failed at 3 as asked');
      expect(row.finished_at).not.toBeNull();
    });

    it.skipIf(!available)('two runners on their own connections race for each job: exactly one runs it', async () => {
      const a = await runner();
      const b = await runner();
      const ran: string[] = [];
      const counting = async (input: unknown) => void ran.push(String(input));
      a.register('race', counting);
      b.register('race', counting);
      for (let i = 0; i < 8; i++) {
        const id = await a.enqueue('race', `job${i}`);
        const claims = await Promise.all([a.run(id), b.run(id), a.run(id), b.run(id)]);
        expect(claims.filter(Boolean), `job${i}`).toHaveLength(1);
        expect((await a.get(id)).state).toBe('succeeded');
      }
      expect(ran.sort()).toEqual(Array.from({ length: 8 }, (_, i) => `job${i}`).sort());
    });

    it.skipIf(!available)('a job whose owner died is marked failed when read and at start-up; a live one is not', async () => {
      const clock = new FakeClock(Date.parse('2026-06-01T12:00:00Z'));
      const repo = new JobRepository(await open());
      const reader = await runner({ staleMs: 60_000 }, clock);
      const dead = await reader.enqueue('sample', { count: 1 });
      const dead2 = await reader.enqueue('sample', { count: 1 });
      const alive = await reader.enqueue('sample', { count: 1 });
      // Claimed by processes that are gone: their heartbeats stopped 2 minutes ago.
      expect(await repo.claim(dead, 'ghost:1', clock.now() - 120_000)).toBe(true);
      expect(await repo.claim(dead2, 'ghost:2', clock.now() - 120_000)).toBe(true);
      expect(await repo.claim(alive, 'busy:3', clock.now() - 5_000)).toBe(true);
      expect(await reader.get(dead)).toMatchObject({ state: 'failed', message: expect.stringMatching(/process running this job stopped/) });
      expect(await reader.get(alive)).toMatchObject({ state: 'running' });
      expect(await reader.recover()).toEqual({ failed: 1, started: 0 });
      expect(await reader.get(dead2)).toMatchObject({ state: 'failed' });
      expect(await reader.get(alive)).toMatchObject({ state: 'running' });
      // The owner coming back late cannot overwrite the verdict.
      expect(await repo.finish(dead, 'ghost:1', clock.now(), { state: 'succeeded', message: 'done', result: '1', error: null })).toBe(false);
      expect((await reader.get(dead)).state).toBe('failed');
    });

    it.skipIf(!available)('heartbeats keep a long job alive for another reader; start-up runs queued jobs', async () => {
      // A fixed wait on purpose: nothing must happen (the job is not marked dead) for longer than staleMs.
      // The margin is what a busy 2-core machine needs: a heartbeat every 50 ms against 3 s of silence
      // before a job counts as dead (400 ms let a starved event loop miss it).
      const a = await runner({ heartbeatMs: 50, staleMs: 3000 });
      const g = gate();
      a.register('gated', g.handler);
      const id = await a.start('gated', null);
      await g.halfway;
      const reader = await runner({ staleMs: 3000 });
      await new Promise((r) => setTimeout(r, 4000));
      expect((await reader.get(id)).state).toBe('running');
      g.release();
      await settled(reader, id);
      expect((await reader.get(id)).state).toBe('succeeded');

      const queued = await a.enqueue('sample', { count: 2, step_ms: 1 });
      const later = await runner();
      expect(await later.recover()).toEqual({ failed: 0, started: 1 });
      await settled(later, queued);
      expect((await later.get(queued)) as Job).toMatchObject({ state: 'succeeded' });
    });

    it.skipIf(!available)('stop() interrupts a running job, which ends failed', async () => {
      const a = await runner();
      const id = await a.start('sample', { count: 1000, step_ms: 50 });
      await expect.poll(async () => (await a.get(id)).state, { timeout: 30_000 }).toBe('running');
      await a.stop();
      expect(await a.get(id)).toMatchObject({ state: 'failed', message: 'interrupted: the service stopped' });
    });
  });
}
