import { beforeEach, describe, expect, it } from 'vitest';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ExecError } from './exec.js';
import { execLines, startLineBatches } from './exec-lines.js';
import type { StartedLines } from './exec-lines.js';

const NODE = process.execPath;

// Memory still held (after a full collection), not what the heap has yet to collect.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
function retained(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const line of it) out.push(line);
  return out;
}

async function failure(p: Promise<unknown>): Promise<ExecError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof ExecError)) throw new Error(`expected an ExecError, got ${String(err)}`);
  return err;
}

describe('execLines', () => {
  it('yields stdout line by line (CRLF, a last line without newline, multi-byte characters split across chunks)', async () => {
    const script = 'process.stdout.write("a\\r\\nb\\n"); process.stdout.write(Buffer.from("ü", "utf8").subarray(0, 1)); setTimeout(() => process.stdout.write(Buffer.concat([Buffer.from("ü", "utf8").subarray(1), Buffer.from("x\\nlast")])), 50)';
    expect(await collect(execLines(NODE, ['-e', script]))).toEqual(['a', 'b', 'üx', 'last']);
  });

  it('reports stderr lines and progress as they come', async () => {
    const errs: string[] = [];
    const progress: number[] = [];
    const script = 'for (let i = 0; i < 3; i++) { process.stderr.write(`step ${i}\\n`); process.stdout.write(`line ${i}\\n`); }';
    const lines = await collect(execLines(NODE, ['-e', script], { onStderrLine: (l) => errs.push(l), onProgress: (p) => progress.push(p.lines) }));
    expect(lines).toEqual(['line 0', 'line 1', 'line 2']);
    expect(errs).toEqual(['step 0', 'step 1', 'step 2']);
    expect(progress.at(-1)).toBe(3);
  });

  it('streams a huge output in flat memory, with backpressure on the program', async () => {
    // 500,000 lines of 200 bytes = 100 MB. The program reports on stderr how far it got.
    const script =
      'const l = "x".repeat(199) + "\\n"; let i = 0; function w() { while (i < 500000) { i++; if (i % 1000 === 0) process.stderr.write(i + "\\n");' +
      ' if (!process.stdout.write(l)) { process.stdout.once("drain", w); return; } } } w();';
    let written = 0;
    const before = retained();
    let peak = before;
    let count = 0;
    let writtenDuringPause = -1;
    for await (const line of execLines(NODE, ['-e', script], { timeoutMs: 120_000, onStderrLine: (l) => (written = Number(l)) })) {
      count += 1;
      if (line.length !== 199) throw new Error('bad line');
      if (count % 50_000 === 0) peak = Math.max(peak, retained());
      if (count === 10) {
        // Deliberately fixed: the program must NOT get far while nobody reads. A slower machine
        // writes less in this time, so the margin never turns a pass into a failure.
        await new Promise((r) => setTimeout(r, 500));
        writtenDuringPause = written;
      }
    }
    expect(count).toBe(500_000);
    // While the loop waited, the program was held by the full pipe: a few hundred KB, not 100 MB.
    expect(writtenDuringPause).toBeLessThan(10_000);
    expect(peak - before).toBeLessThan(8 * 1024 * 1024);
  }, 120_000);

  it('leaving the loop early stops the program', async () => {
    const started = Date.now();
    let n = 0;
    for await (const line of execLines('/usr/bin/yes', ['y'])) {
      expect(line).toBe('y');
      if (++n === 5) break;
    }
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('ends with the typed errors: exit (with stderr), not-found, timeout, output-cap, aborted', async () => {
    const exit = await failure(collect(execLines(NODE, ['-e', 'console.log("ok"); console.error("broken queue"); process.exit(75)'])));
    expect([exit.kind, exit.code, exit.stderr]).toEqual(['exit', 75, 'broken queue']);
    expect((await failure(collect(execLines('/nonexistent/postqueue', ['-j'])))).kind).toBe('not-found');
    expect((await failure(collect(execLines('sleep', ['30'], { timeoutMs: 300 })))).kind).toBe('timeout');
    expect((await failure(collect(execLines('/bin/cat', ['/dev/zero'], { maxLineBytes: 64 * 1024 })))).kind).toBe('output-cap');
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    expect((await failure(collect(execLines('sleep', ['30'], { signal: ac.signal })))).kind).toBe('aborted');
    const ok = await collect(execLines(NODE, ['-e', 'console.log("none"); process.exit(68)'], { okCodes: [0, 68] }));
    expect(ok).toEqual(['none']);
  });
});

/** How many child processes (not yet reaped) and pipes this process holds. */
const held = (kinds: readonly string[]): number => process.getActiveResourcesInfo().filter((r) => kinds.includes(r)).length;
const CHILDREN = ['ProcessWrap'];
const CHILDREN_AND_PIPES = ['ProcessWrap', 'PipeWrap'];

/** Turns of the event loop until `ok` holds (no clock involved). */
async function until(ok: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 100_000; i++) {
    if (ok()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`still waiting: ${what} (${process.getActiveResourcesInfo().join(", ")})`);
}

/** The two ways to read a started program: every batch of lines it yielded, in order. */
const READERS: [string, (run: StartedLines) => Promise<string[][]>][] = [
  ['batches()', (run) => collect(run.batches())],
  [
    'each()',
    async (run) => {
      const out: string[][] = [];
      await run.each((lines) => void out.push(lines));
      return out;
    },
  ],
];

describe.each(READERS)('startLineBatches, read with %s', (_name, read) => {
  // The programs of the tests above are reaped (a killed one may take a moment): each test counts its own.
  beforeEach(() => until(() => held(CHILDREN) === 0, 'the programs of earlier tests to be reaped'));

  it('runs the program before anyone reads: it prints past the pipe meanwhile and every line is read, in order', async () => {
    // 3,000 lines of 100 bytes (300 KB, more than a pipe holds); "printing" on stderr once it has started.
    const script = 'process.stderr.write("printing\\n"); for (let i = 0; i < 3000; i++) process.stdout.write(String(i).padStart(99, "0") + "\\n")';
    let printing = false;
    const run = startLineBatches(NODE, ['-e', script], { onStderrLine: (l) => (printing ||= l === 'printing') });
    await until(() => printing, 'the program to start printing');
    expect((await read(run)).flat()).toEqual(Array.from({ length: 3000 }, (_, i) => String(i).padStart(99, '0')));
    await expect(read(run)).rejects.toThrow('read already');
  });

  it('keeps what a program printed when it exited before anyone read', async () => {
    const run = startLineBatches(NODE, ['-e', 'console.log("one"); console.log("two")']);
    await until(() => held(CHILDREN) === 0, 'the program to exit');
    expect(await read(run)).toEqual([['one', 'two']]);
  });

  it('stop ends a program nobody read, even one waiting on a full pipe', async () => {
    const run = startLineBatches('/usr/bin/yes', ['y']);
    expect(held(CHILDREN)).toBe(1);
    run.stop();
    await until(() => held(CHILDREN) === 0, 'yes to end');
    expect((await failure(read(run))).kind).toBe('aborted');
  });

  it('a program that could not start is not-found when read late (not "exited -2": its close came too)', async () => {
    const before = held(CHILDREN_AND_PIPES);
    const run = startLineBatches('/nonexistent/postqueue', ['-j']);
    expect(held(CHILDREN_AND_PIPES)).toBeGreaterThan(before);
    await until(() => held(CHILDREN_AND_PIPES) === before, 'the failed start to be reported and its pipes closed');
    const err = await failure(read(run));
    expect([err.kind, err.message]).toEqual(['not-found', 'postqueue: cannot run the program (not found)']);
  });

  it('ends with the typed errors when read at once: exit (with stderr), not-found, timeout, output-cap', async () => {
    const exit = await failure(read(startLineBatches(NODE, ['-e', 'console.log("ok"); console.error("broken queue"); process.exit(75)'])));
    expect([exit.kind, exit.code, exit.stderr]).toEqual(['exit', 75, 'broken queue']);
    expect((await failure(read(startLineBatches('/nonexistent/postqueue', ['-j'])))).kind).toBe('not-found');
    expect((await failure(read(startLineBatches('sleep', ['30'], { timeoutMs: 300 })))).kind).toBe('timeout');
    expect((await failure(read(startLineBatches('/bin/cat', ['/dev/zero'], { maxLineBytes: 64 * 1024 })))).kind).toBe('output-cap');
    expect(await read(startLineBatches(NODE, ['-e', 'console.log("none"); process.exit(68)'], { okCodes: [0, 68] }))).toEqual([['none']]);
  });
});

describe('startLineBatches, read with each()', () => {
  beforeEach(() => until(() => held(CHILDREN) === 0, 'the programs of earlier tests to be reaped'));

  it('hands every line at once as it is read, all that was read in one go', async () => {
    // 200,000 lines, about 1.3 MB: fewer calls than lines, and none of them empty.
    const sizes: number[] = [];
    await startLineBatches(NODE, ['-e', 'for (let i = 0; i < 200000; i++) process.stdout.write(i + "\\n")']).each((lines) => void sizes.push(lines.length));
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(200_000);
    expect(sizes.length).toBeLessThan(200_000 / 10);
    expect(Math.min(...sizes)).toBeGreaterThan(0);
  });

  it('false from visit stops the program and resolves; an exception stops it and rejects with that exception', async () => {
    let seen = 0;
    await startLineBatches('/usr/bin/yes', ['y']).each((lines) => {
      seen += lines.length;
      return seen < 5 ? undefined : false;
    });
    await until(() => held(CHILDREN) === 0, 'yes to end after false');
    await expect(startLineBatches('/usr/bin/yes', ['y']).each(() => {
      throw new Error('not an entry');
    })).rejects.toThrow('not an entry');
    await until(() => held(CHILDREN) === 0, 'yes to end after the exception');
  });
});
