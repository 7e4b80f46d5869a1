import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { basename } from 'node:path';

export type ExecErrorKind = 'not-found' | 'timeout' | 'output-cap' | 'exit' | 'signal' | 'aborted';

/** The longest piece of stderr an error carries: enough to say why, never a whole log. */
const STDERR_IN_ERROR = 500;

/**
 * Why a program did not give an accepted result. The message names the program
 * (not its arguments, which a caller may not want in a log) and, for `exit`,
 * the trimmed stderr.
 */
export class ExecError extends Error {
  readonly kind: ExecErrorKind;
  readonly program: string;
  /** Exit status, for `exit`. */
  readonly code: number | undefined;
  /** The signal that ended the program, for `signal`. */
  readonly signal: NodeJS.Signals | undefined;
  /** Trimmed stderr (at most 500 characters). */
  readonly stderr: string;

  constructor(kind: ExecErrorKind, program: string, detail: { code?: number; signal?: NodeJS.Signals; stderr?: string; reason?: string } = {}) {
    const stderr = trimStderr(detail.stderr ?? '');
    const name = basename(program);
    const why: Record<ExecErrorKind, string> = {
      'not-found': `${name}: cannot run the program (${detail.reason ?? 'not found'})`,
      timeout: `${name}: no answer within ${detail.reason ?? 'the time limit'}; it was stopped`,
      'output-cap': `${name}: printed more than ${detail.reason ?? 'the output limit'}; it was stopped`,
      exit: `${name} exited ${detail.code ?? '?'}${stderr ? `: ${stderr}` : ''}`,
      signal: `${name} was ended by ${detail.signal ?? 'a signal'}${stderr ? `: ${stderr}` : ''}`,
      aborted: `${name}: stopped on request`,
    };
    super(why[kind]);
    this.name = 'ExecError';
    this.kind = kind;
    this.program = program;
    this.code = detail.code;
    this.signal = detail.signal;
    this.stderr = stderr;
  }
}

function trimStderr(text: string): string {
  const t = text.trim().replace(/\s*\n\s*/g, ' | ');
  return t.length > STDERR_IN_ERROR ? `${t.slice(0, STDERR_IN_ERROR)}…` : t;
}

export type ExecOptions = {
  /** Kill the program after this long (default 10 s; 0 = no limit). */
  timeoutMs?: number;
  /** The most bytes stdout, and separately stderr, may hold (default 1 MiB). */
  maxOutputBytes?: number;
  /** Written to the program's stdin, which is then closed. Without it stdin is /dev/null. */
  input?: string | Buffer;
  /**
   * The program's whole environment. Default `minimalEnv()`: the service's own
   * environment (database URL, keys) never reaches a child by accident.
   */
  env?: Readonly<Record<string, string>>;
  cwd?: string;
  signal?: AbortSignal;
  /** Exit codes that count as success (default [0]); e.g. doveadm kick's 68 "nobody was connected". */
  okCodes?: readonly number[];
};

export type ExecResult = { code: number; stdout: string; stderr: string };

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** PATH (the service's, so programs are found as before) and LANG=C (stable, parseable messages); plus `extra`. */
export function minimalEnv(extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  return { PATH: process.env.PATH || DEFAULT_PATH, LANG: 'C', ...extra };
}

export type Child = {
  proc: ChildProcess;
  /** Rejects (once) with the reason the program was stopped or could not start. */
  stopped: Promise<never>;
  /** Ends the program and its process group with `kind` as the reason. */
  stop(kind: 'timeout' | 'output-cap' | 'aborted', reason?: string): void;
  clear(): void;
};

/**
 * Starts `file` with `args` (no shell) in its own process group, so a timeout
 * also ends what it started (a wrapper script's children). Shared by `exec`
 * and `execLines`.
 */
export function startChild(file: string, args: readonly string[], opts: ExecOptions): Child {
  let rejectStopped: (err: ExecError) => void = () => undefined;
  const stopped = new Promise<never>((_, reject) => {
    rejectStopped = reject;
  });
  stopped.catch(() => undefined);
  let settled = false;
  const proc = spawn(file, [...args], {
    shell: false,
    env: opts.env ?? minimalEnv(),
    cwd: opts.cwd,
    detached: true,
    stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  // Errors reach readers through `stopped`; a stream's own 'error' event must not crash the process.
  proc.stdout?.on('error', () => undefined);
  proc.stderr?.on('error', () => undefined);
  let killTimer: NodeJS.Timeout | undefined;
  // The whole group, even when the program itself has exited: what it left behind may still hold stdout open.
  const killGroup = (sig: NodeJS.Signals): void => {
    if (proc.pid === undefined) return;
    try {
      process.kill(-proc.pid, sig);
    } catch {
      // ESRCH: nothing of the group is left.
    }
  };
  const stop = (kind: 'timeout' | 'output-cap' | 'aborted', reason?: string): void => {
    if (settled) return;
    settled = true;
    killGroup('SIGTERM');
    // A program that ignores SIGTERM gets SIGKILL; unref'd so it never holds the event loop.
    killTimer = setTimeout(() => killGroup('SIGKILL'), 2000);
    killTimer.unref();
    const err = new ExecError(kind, file, reason === undefined ? {} : { reason });
    // A reader of stdout (execLines' loop) gets the reason from the stream itself.
    proc.stdout?.destroy(err);
    proc.stderr?.destroy();
    rejectStopped(err);
  };
  proc.once('error', (err: NodeJS.ErrnoException) => {
    if (settled) return;
    settled = true;
    const reason = err.code === 'ENOENT' ? 'not found' : err.code === 'EACCES' ? 'not executable' : (err.code ?? err.message);
    rejectStopped(new ExecError('not-found', file, { reason }));
  });
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const timer = timeoutMs > 0 ? setTimeout(() => stop('timeout', `${timeoutMs} ms`), timeoutMs) : undefined;
  const onAbort = (): void => stop('aborted');
  if (opts.signal?.aborted) queueMicrotask(onAbort);
  else opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.input !== undefined && proc.stdin) {
    // A program that exits without reading its input closes the pipe: not our error.
    proc.stdin.on('error', () => undefined);
    proc.stdin.end(opts.input);
  }
  return {
    proc,
    stopped,
    stop,
    clear() {
      settled = true;
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    },
  };
}

/** Collects one stream up to `max` bytes; past that, calls `over`. */
function collect(stream: NodeJS.ReadableStream | null, max: number, over: () => void): () => string {
  const parts: Buffer[] = [];
  let size = 0;
  stream?.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > max) over();
    else parts.push(chunk);
  });
  stream?.on('error', () => undefined);
  return () => Buffer.concat(parts).toString('utf8');
}

/**
 * The one way this service runs a program: an argument array (never a shell),
 * a timeout, capped output, a minimal environment. Resolves when it exits with
 * an accepted code; otherwise rejects with an `ExecError` saying why.
 */
export async function exec(file: string, args: readonly string[], opts: ExecOptions = {}): Promise<ExecResult> {
  const r = await execAnyCode(file, args, opts);
  if (!(opts.okCodes ?? [0]).includes(r.code)) throw new ExecError('exit', file, { code: r.code, stderr: r.stderr });
  return r;
}

/** Like `exec`, but any exit status is a result: only a program that did not run to its end is an error. */
async function execAnyCode(file: string, args: readonly string[], opts: ExecOptions): Promise<ExecResult> {
  const child = startChild(file, args, opts);
  const max = opts.maxOutputBytes ?? 1024 * 1024;
  const cap = (): void => child.stop('output-cap', `${max} bytes`);
  const stdout = collect(child.proc.stdout, max, cap);
  const stderr = collect(child.proc.stderr, max, cap);
  // 'close' waits for stdout and stderr to end, so no output is lost.
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.proc.once('close', (code, signal) => resolve({ code, signal }));
  });
  try {
    const { code, signal } = await Promise.race([closed, child.stopped]);
    if (code === null) throw new ExecError('signal', file, { ...(signal ? { signal } : {}), stderr: stderr() });
    return { code, stdout: stdout(), stderr: stderr() };
  } finally {
    child.clear();
  }
}

/**
 * The first exec, kept for its callers: a non-zero exit is a result, not an
 * exception; a program that cannot start, overruns its time or its output cap,
 * or dies by a signal is an `ExecError`. Runs with `minimalEnv()`.
 */
export function run(file: string, args: readonly string[], opts: { timeoutMs?: number; maxBytes?: number } = {}): Promise<ExecResult> {
  return execAnyCode(file, args, { timeoutMs: opts.timeoutMs ?? 10_000, maxOutputBytes: opts.maxBytes ?? 1024 * 1024 });
}
