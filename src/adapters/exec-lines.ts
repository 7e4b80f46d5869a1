import { ExecError, startChild } from './exec.js';
import type { ExecOptions } from './exec.js';

export type LineProgress = { lines: number; bytes: number };

export type ExecLinesOptions = Omit<ExecOptions, 'maxOutputBytes'> & {
  /** The longest stdout or stderr line accepted (default 1 MiB); a longer one stops the program (`output-cap`). */
  maxLineBytes?: number;
  /** Each stderr line as it arrives (tools print progress there). */
  onStderrLine?: (line: string) => void;
  /** stdout lines and bytes read so far, after each chunk. */
  onProgress?: (progress: LineProgress) => void;
};

const NL = 0x0a;

/** Splits a byte stream into lines without decoding partial characters; keeps only the unfinished line. */
class LineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  constructor(
    private readonly max: number,
    private readonly over: () => void,
  ) {}

  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    let nl: number;
    while ((nl = chunk.indexOf(NL, start)) >= 0) {
      this.add(chunk.subarray(start, nl));
      lines.push(this.take());
      start = nl + 1;
    }
    if (start < chunk.length) this.add(chunk.subarray(start));
    return lines;
  }

  /** The last line, when the stream ended without a newline. */
  rest(): string | null {
    return this.size > 0 ? this.take() : null;
  }

  private add(part: Buffer): void {
    this.size += part.length;
    if (this.size > this.max) this.over();
    else this.parts.push(part);
  }

  private take(): string {
    const bytes = this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts);
    const line = bytes.toString('utf8').replace(/\r$/, '');
    this.parts = [];
    this.size = 0;
    return line;
  }
}

/**
 * Runs a program and yields its stdout line by line (see execLineBatches).
 */
export async function* execLines(file: string, args: readonly string[], opts: ExecLinesOptions = {}): AsyncGenerator<string, void, undefined> {
  for await (const lines of execLineBatches(file, args, opts)) yield* lines;
}

/**
 * Runs a program and yields its stdout lines, those of each chunk read at
 * once: one step of the loop (a promise) per chunk of up to 64 KiB rather than
 * per line, for a consumer that handles a line synchronously (postqueue -j's
 * 20,000 entries). The next chunk is read
 * only when the consumer asks for more lines, so a slow consumer blocks the
 * program on a full pipe instead of filling memory: `postqueue -j` with
 * 20,000 messages streams in constant memory. stderr is read as it comes
 * (to `onStderrLine`; its last 4 KiB are kept for the error). Ends with the
 * same `ExecError`s as `exec`; leaving the loop early stops the program.
 * The default time limit is 60 s for the whole run.
 */
export async function* execLineBatches(file: string, args: readonly string[], opts: ExecLinesOptions = {}): AsyncGenerator<string[], void, undefined> {
  yield* startLineBatches(file, args, opts).batches();
}

/** A program started by `startLineBatches`, not read yet. */
export type StartedLines = {
  /** Its stdout lines as `execLineBatches` yields them; for one reader, once (this or `each`). */
  batches(): AsyncGenerator<string[], void, undefined>;
  /**
   * The same lines handed to `visit` synchronously as they are read, for a
   * reader that handles them at once; `visit` returning false stops the
   * program, an exception stops it and rejects. Resolves or rejects as
   * `batches` ends.
   */
  each(visit: (lines: string[]) => boolean | void): Promise<void>;
  /** Stops the program unless a reader took it to its end (a reader that stopped early has stopped it already). */
  stop(): void;
};

/**
 * `execLineBatches`, with the program started now and read later: a caller
 * that is not ready to read yet (a CLI command still loading its code) lets
 * the program work meanwhile. What it prints before the reader comes waits in
 * the pipe and in the stream's buffer (a few dozen KiB), then the program
 * waits on the full pipe: memory stays flat. A program never read must be
 * stopped (`stop`), or it keeps the process alive.
 */
export function startLineBatches(file: string, args: readonly string[], opts: ExecLinesOptions = {}): StartedLines {
  const child = startChild(file, args, { timeoutMs: 60_000, ...opts });
  const max = opts.maxLineBytes ?? 1024 * 1024;
  const cap = (): void => child.stop('output-cap', `${max} bytes in one line`);
  let stderrTail = '';
  const errLines = new LineSplitter(max, cap);
  const onErrLine = (line: string): void => {
    stderrTail = `${stderrTail}\n${line}`.slice(-4096);
    opts.onStderrLine?.(line);
  };
  child.proc.stderr?.on('data', (chunk: Buffer) => errLines.push(chunk).forEach(onErrLine));
  child.proc.stderr?.on('error', () => undefined);
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.proc.once('close', (code, signal) => resolve({ code, signal }));
  });
  // When a program exits, Node drains (and drops) what it printed to a stdout nobody listens to: this
  // listener keeps it for a reader that comes later. It reads nothing itself, so the stream still
  // takes no more than its buffer holds.
  child.proc.stdout?.on('readable', () => undefined);
  let taken = false;
  let ended = false;
  const end = (finished: boolean): void => {
    if (ended) return;
    ended = true;
    // The reader stopped early (break, an exception), or there was none: the program is not needed any more.
    if (!finished) child.stop('aborted');
    child.clear();
  };

  /** How the program ended, once its stdout has: the ExecError of a failure. */
  async function exitStatus(): Promise<void> {
    // `stopped` first: a program that could not start has both rejected it ('error') and closed
    // (exit code -2) by the time a late reader gets here, and the reason is the former.
    const { code, signal } = await Promise.race([child.stopped, closed]);
    const rest = errLines.rest();
    if (rest !== null) onErrLine(rest);
    if (code === null) throw new ExecError('signal', file, { ...(signal ? { signal } : {}), stderr: stderrTail });
    if (!(opts.okCodes ?? [0]).includes(code)) throw new ExecError('exit', file, { code, stderr: stderrTail });
  }

  /** The one reader's line splitting and progress: `feed` each chunk read, `last` once stdout has ended. */
  function take(): { feed(chunk: Buffer): string[]; last(): string | null } {
    if (taken) throw new Error(`${file}: its output was read already`);
    taken = true;
    const outLines = new LineSplitter(max, cap);
    const progress: LineProgress = { lines: 0, bytes: 0 };
    return {
      feed: (chunk) => {
        progress.bytes += chunk.length;
        const lines = outLines.push(chunk);
        progress.lines += lines.length;
        opts.onProgress?.({ ...progress });
        return lines;
      },
      last: () => {
        const rest = outLines.rest();
        if (rest !== null) progress.lines += 1;
        return rest;
      },
    };
  }

  async function* batches(): AsyncGenerator<string[], void, undefined> {
    const reader = take();
    let finished = false;
    try {
      const stdout = child.proc.stdout;
      if (stdout) {
        // A timeout, cap or abort destroys stdout with its ExecError, which ends this loop even while the
        // program is silent. (Racing each read against one long-lived promise would keep every chunk alive.)
        for await (const chunk of stdout as AsyncIterable<Buffer>) {
          const lines = reader.feed(chunk);
          if (lines.length > 0) yield lines;
        }
      }
      const last = reader.last();
      if (last !== null) yield [last];
      finished = true;
      await exitStatus();
    } finally {
      end(finished);
    }
  }

  /*
   * What stdout holds is taken whenever it is readable, all of it at once, and
   * its lines handed to `visit` there and then: no promise per chunk. A program
   * that writes a line at a time (postqueue -j) is read a few hundred bytes at
   * a time when the reader keeps up, and a promise for each was most of what
   * 20,000 entries cost.
   */
  function each(visit: (lines: string[]) => boolean | void): Promise<void> {
    const reader = take();
    const stdout = child.proc.stdout;
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (finished: boolean, err?: unknown): void => {
        if (settled) return;
        settled = true;
        stdout?.off('readable', onReadable);
        end(finished);
        if (err === undefined) resolve();
        else reject(err instanceof Error ? err : new Error(String(err)));
      };
      const hand = (lines: string[]): void => {
        try {
          if (lines.length > 0 && visit(lines) === false) settle(false);
        } catch (err) {
          settle(false, err);
        }
      };
      function onReadable(): void {
        let chunk: Buffer | null;
        while (!settled && (chunk = stdout?.read() as Buffer | null) !== null) hand(reader.feed(chunk));
      }
      const onEnd = (): void => {
        const last = settled ? null : reader.last();
        if (last !== null) hand([last]);
        if (!settled) exitStatus().then(() => settle(true), (err: unknown) => settle(true, err));
      };
      // Done before the reader came (a program that could not start, or was stopped): no event will come.
      if (!stdout || stdout.readableEnded || stdout.destroyed) return stdout?.errored ? settle(false, stdout.errored) : onEnd();
      // A timeout, cap or abort destroys stdout with its ExecError.
      stdout.once('error', (err) => settle(false, err));
      stdout.once('end', onEnd);
      stdout.on('readable', onReadable);
      onReadable();
    });
  }

  return { batches, each, stop: () => end(false) };
}
