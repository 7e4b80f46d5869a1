import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { JobTable } from './tables.js';
import type { Clock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';
import type { JobRepository } from './job.repository.js';
import type { Job } from './schema.js';

export type JobContext = {
  /** Reports progress (0..1, clamped) and what the job is doing now. */
  progress(fraction: number, message: string): Promise<void>;
  /** Aborted when the process shuts down or the job was taken away (declared dead). */
  signal: AbortSignal;
};
/**
 * Thrown by a handler whose failure carries something the caller needs to say
 * why (an error code, a Retry-After): the job fails with `message` and keeps
 * `result`. Any other error fails the job with no result.
 */
export class JobFailed extends Error {
  constructor(
    message: string,
    readonly result: unknown,
  ) {
    super(message);
    this.name = 'JobFailed';
  }
}

export type JobHandler<I = unknown> = (input: I, ctx: JobContext) => Promise<unknown>;
export type JobUpdate = { progress: number; message: string };

export type RunnerOptions = {
  /** How often a running job's row is touched. */
  heartbeatMs?: number;
  /** A running job whose heartbeat is older than this is dead: its process is gone. */
  staleMs?: number;
  /** Unique per process; made from host, pid and random bytes when not given. */
  owner?: string;
};

const MESSAGE_MAX = 1024;
/** Progress rows are written when the message changes, the fraction moves this much, or this long has passed. */
const PROGRESS_STEP = 0.01;
const PROGRESS_EVERY_MS = 1000;

const newId = (): string => randomBytes(12).toString('hex');
const text = (err: unknown): string => (err instanceof AppError ? err.detail : err instanceof Error ? err.message : String(err)).slice(0, MESSAGE_MAX);

export function presentJob(row: JobTable): Job {
  let result: unknown = null;
  if (row.result !== null) {
    try {
      result = JSON.parse(row.result) as unknown;
    } catch {
      result = null;
    }
  }
  return { id: row.id, kind: row.kind, state: row.state, progress: Number(row.progress), message: row.message, result };
}

/**
 * Runs long work as jobs recorded in the database. A job runs once however
 * many processes share the database: it is claimed by a conditional UPDATE
 * (`state='queued'` → `running`, owner set) and only the process whose
 * UPDATE changed the row runs it. A running job's row is touched every
 * heartbeat; one whose heartbeat stopped (its process died) is marked failed
 * when read and at start-up, never left running.
 */
export class JobRunner {
  readonly owner: string;
  private readonly handlers = new Map<string, JobHandler>();
  private readonly running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  private readonly heartbeatMs: number;
  private readonly staleMs: number;

  constructor(
    private readonly repo: JobRepository,
    private readonly clock: Clock,
    private readonly log: Logger,
    opts: RunnerOptions = {},
  ) {
    this.owner = opts.owner ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    this.heartbeatMs = opts.heartbeatMs ?? 10_000;
    this.staleMs = opts.staleMs ?? 60_000;
  }

  register<I>(kind: string, handler: JobHandler<I>): void {
    if (this.handlers.has(kind)) throw new Error(`job kind ${kind} is registered twice`);
    this.handlers.set(kind, handler as JobHandler);
  }

  /** Records a queued job and starts it in the background; the caller answers 202 with the id. */
  async start(kind: string, input: unknown): Promise<string> {
    const id = await this.enqueue(kind, input);
    // A database failure before the handler runs leaves the job queued: recover() at the next start takes it.
    this.run(id).catch((err: unknown) => this.log.error({ job: id, err: { message: text(err) } }, 'job could not be started'));
    return id;
  }

  /** Records a queued job without running it (another runner, or `run`, takes it). */
  async enqueue(kind: string, input: unknown): Promise<string> {
    if (!this.handlers.has(kind)) throw new AppError('bad_request', `Unknown job kind "${kind}"`);
    const id = newId();
    await this.repo.insert({ id, kind, input: JSON.stringify(input ?? null), created_at: this.clock.now() });
    return id;
  }

  /** Runs a job in the foreground (the CLI), reporting each update; returns the final record. */
  async runHere(kind: string, input: unknown, onUpdate: (u: JobUpdate) => void, signal?: AbortSignal): Promise<Job> {
    const id = await this.enqueue(kind, input);
    await this.run(id, onUpdate, signal);
    return this.get(id);
  }

  /**
   * Claims a queued job and runs it to the end. Returns false when another
   * process claimed it first (then this one does nothing).
   */
  async run(id: string, onUpdate?: (u: JobUpdate) => void, signal?: AbortSignal): Promise<boolean> {
    const row = await this.repo.get(id);
    if (!row) throw new AppError('not_found', `No job ${id}`);
    const handler = this.handlers.get(row.kind);
    if (!handler) return false;
    const abort = new AbortController();
    signal?.addEventListener('abort', () => abort.abort(signal.reason), { once: true });
    let settle = (): void => undefined;
    const done = new Promise<void>((resolve) => (settle = resolve));
    // Known to stop() before the claim commits: a stop that sees the job running in the
    // database must find it here too (it then ends interrupted, not left running).
    this.running.set(id, { abort, done });
    try {
      if (!(await this.repo.claim(id, this.owner, this.clock.now()))) return false;
      await this.execute(row, handler, abort, onUpdate);
    } finally {
      this.running.delete(id);
      settle();
    }
    return true;
  }

  private async execute(row: JobTable, handler: JobHandler, abort: AbortController, onUpdate?: (u: JobUpdate) => void): Promise<void> {
    const { id } = row;
    const lost = (): void => {
      if (!abort.signal.aborted) abort.abort(new Error('the job was marked failed by another process (its heartbeat was late)'));
    };
    const beat = setInterval(() => {
      this.repo.touch(id, this.owner, this.clock.now()).then(
        (mine) => (mine ? undefined : lost()),
        (err: unknown) => this.log.warn({ job: id, err: { message: text(err) } }, 'job heartbeat failed'),
      );
    }, this.heartbeatMs);
    beat.unref();
    let last = { fraction: 0, message: 'started', at: this.clock.now() };
    const ctx: JobContext = {
      signal: abort.signal,
      progress: async (fraction, message) => {
        const f = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : last.fraction;
        const m = message.slice(0, MESSAGE_MAX);
        onUpdate?.({ progress: f, message: m });
        const now = this.clock.now();
        if (m === last.message && Math.abs(f - last.fraction) < PROGRESS_STEP && now - last.at < PROGRESS_EVERY_MS) return;
        last = { fraction: f, message: m, at: now };
        if (!(await this.repo.touch(id, this.owner, now, { fraction: f, message: m }))) lost();
      },
    };
    let input: unknown = null;
    try {
      input = JSON.parse(row.input) as unknown;
    } catch {
      input = null;
    }
    let end: { state: 'succeeded' | 'failed'; message: string; result: string | null; error: string | null };
    try {
      const result = await handler(input, ctx);
      if (abort.signal.aborted) throw abort.signal.reason instanceof Error ? abort.signal.reason : new Error('interrupted');
      end = { state: 'succeeded', message: 'done', result: JSON.stringify(result ?? null), error: null };
    } catch (err) {
      end = { state: 'failed', message: text(err), result: err instanceof JobFailed ? JSON.stringify(err.result ?? null) : null, error: text(err) };
    } finally {
      clearInterval(beat);
    }
    if (end.state === 'failed') this.log.warn({ job: id, kind: row.kind, message: end.message }, 'job failed');
    onUpdate?.({ progress: end.state === 'succeeded' ? 1 : last.fraction, message: end.message });
    if (!(await this.repo.finish(id, this.owner, this.clock.now(), end))) {
      this.log.warn({ job: id }, 'job finished after another process had marked it failed; its outcome is dropped');
    }
  }

  /** The job as the API shows it; a running job whose owner stopped beating is marked failed first. */
  async get(id: string): Promise<Job> {
    let row = await this.repo.get(id);
    if (!row) throw new AppError('not_found', `No job ${id}`);
    if (row.state === 'running' && (row.heartbeat_at ?? 0) < this.clock.now() - this.staleMs) {
      await this.repo.failStale(this.clock.now() - this.staleMs, this.clock.now(), this.deadMessage(), id);
      row = (await this.repo.get(id)) ?? row;
    }
    return presentJob(row);
  }

  /** At start-up: marks every dead job failed, then takes the queued jobs this runner can run. */
  async recover(): Promise<{ failed: number; started: number }> {
    const now = this.clock.now();
    const failed = await this.repo.failStale(now - this.staleMs, now, this.deadMessage());
    if (failed > 0) this.log.warn({ failed }, 'jobs whose process died were marked failed');
    let started = 0;
    for (const id of await this.repo.queuedOf([...this.handlers.keys()])) {
      started++;
      void this.run(id).catch((err: unknown) => this.log.error({ job: id, err: { message: text(err) } }, 'queued job could not run'));
    }
    return { failed, started };
  }

  /** Stops every job this process runs (they end failed: interrupted) and waits for them. */
  async stop(): Promise<void> {
    const all = [...this.running.values()];
    for (const r of all) r.abort.abort(new Error('interrupted: the service stopped'));
    await Promise.all(all.map((r) => r.done));
  }

  private deadMessage(): string {
    return `the process running this job stopped (no heartbeat for ${Math.round(this.staleMs / 1000)} s)`;
  }
}
