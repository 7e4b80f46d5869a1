import { describe, expect, it, vi } from 'vitest';
import { mkdtempSync, readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecError, exec, minimalEnv, run } from './exec.js';

// Real programs, no doubles: /bin/cat, sleep, node, a path that does not exist.
const NODE = process.execPath;

/** A process's state letter, or `gone`: an ended orphan may stay a zombie where PID 1 does not reap. */
function processState(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').charAt(0);
  } catch {
    return 'gone';
  }
}

async function execError(p: Promise<unknown>): Promise<ExecError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof ExecError)) throw new Error(`expected an ExecError, got ${String(err)}`);
  return err;
}

describe('exec', () => {
  it('passes arguments as they are, without a shell', async () => {
    const r = await exec(NODE, ['-e', 'console.log(JSON.stringify(process.argv.slice(1)))', 'a b', '$(id)', ';rm -rf /', '*']);
    expect(JSON.parse(r.stdout)).toEqual(['a b', '$(id)', ';rm -rf /', '*']);
  });

  it('feeds stdin from a string and from a Buffer', async () => {
    expect((await exec('/bin/cat', [], { input: 'hello\nworld' })).stdout).toBe('hello\nworld');
    const bytes = Buffer.from([0, 1, 2, 255]);
    const r = await exec(NODE, ['-e', 'process.stdin.on("data", (d) => process.stdout.write(d.toString("hex")))'], { input: bytes });
    expect(r.stdout).toBe('000102ff');
  });

  it('uses an explicit environment as the whole environment, and the given cwd', async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'mailsvc-exec-')));
    const r = await exec(NODE, ['-e', 'console.log(JSON.stringify([process.env, process.cwd()]))'], { env: minimalEnv({ FOO: 'bar' }), cwd: dir });
    const [env, cwd] = JSON.parse(r.stdout) as [Record<string, string>, string];
    expect(env).toEqual({ PATH: process.env.PATH, LANG: 'C', FOO: 'bar' });
    expect(cwd).toBe(dir);
  });

  it('a program that does not exist is kind not-found', async () => {
    const err = await execError(exec('/nonexistent/doveadm', ['kick', 'x']));
    expect(err.kind).toBe('not-found');
    expect(err.message).toMatch(/doveadm: cannot run the program \(not found\)/);
    expect((await execError(run('/nonexistent/prog', []))).kind).toBe('not-found');
  });

  it('a rejected exit code is kind exit with the code and the trimmed stderr; okCodes accepts others', async () => {
    const script = 'process.stderr.write("  first\\nsecond  \\n" + "x".repeat(2000)); process.exit(68)';
    const err = await execError(exec(NODE, ['-e', script]));
    expect(err.kind).toBe('exit');
    expect(err.code).toBe(68);
    expect(err.stderr.startsWith('first | second')).toBe(true);
    expect(err.stderr.length).toBeLessThanOrEqual(501);
    expect(err.message).toMatch(/^node exited 68: first \| second/);
    const ok = await exec(NODE, ['-e', 'process.exit(68)'], { okCodes: [0, 68] });
    expect(ok.code).toBe(68);
  });

  it('a program overrunning its time is stopped: kind timeout, quickly', async () => {
    const started = Date.now();
    const err = await execError(exec('sleep', ['30'], { timeoutMs: 300 }));
    expect(err.kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('a timeout also ends what the program started (its process group)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-exec-'));
    const pidFile = join(dir, 'pid');
    // The grandchild holds stdout open; without the group kill the call would wait for it.
    const script = `const c = require("child_process").spawn("sleep", ["30"], { stdio: "inherit" }); require("fs").writeFileSync(${JSON.stringify(pidFile)}, String(c.pid)); setInterval(() => {}, 1000)`;
    const err = await execError(exec(NODE, ['-e', script], { timeoutMs: 500 }));
    expect(err.kind).toBe('timeout');
    const pid = Number(readFileSync(pidFile, 'utf8'));
    // The group's SIGKILL lands a moment later: wait for the state, not a fixed time.
    await vi.waitFor(() => expect(processState(pid)).toMatch(/^(gone|Z)$/), { timeout: 30_000, interval: 50 });
  });

  it('a program that exits but leaves a child holding stdout open still ends at the timeout, child included', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-exec-'));
    const pidFile = join(dir, 'pid');
    const script = `const c = require("child_process").spawn("sleep", ["30"], { stdio: "inherit" }); require("fs").writeFileSync(${JSON.stringify(pidFile)}, String(c.pid)); process.exit(0)`;
    const started = Date.now();
    const err = await execError(exec(NODE, ['-e', script], { timeoutMs: 500 }));
    expect(err.kind).toBe('timeout');
    // Far below the grandchild's 30 s, with room for a busy 2-core machine.
    expect(Date.now() - started).toBeLessThan(15_000);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    await vi.waitFor(() => expect(processState(pid)).toMatch(/^(gone|Z)$/), { timeout: 30_000, interval: 50 });
  });

  it('output over the cap stops the program: kind output-cap, memory bounded', async () => {
    const started = Date.now();
    const err = await execError(exec('/bin/cat', ['/dev/zero'], { maxOutputBytes: 1024 * 1024 }));
    expect(err.kind).toBe('output-cap');
    expect(Date.now() - started).toBeLessThan(5000);
    // The old run() keeps its maxBytes option and now says why.
    expect((await execError(run('/bin/cat', ['/dev/zero'], { maxBytes: 4096 }))).kind).toBe('output-cap');
  });

  it('an abort signal stops the program: kind aborted, also when already aborted', async () => {
    const ac = new AbortController();
    const p = exec('sleep', ['30'], { signal: ac.signal });
    setTimeout(() => ac.abort(), 100);
    expect((await execError(p)).kind).toBe('aborted');
    expect((await execError(exec('sleep', ['30'], { signal: AbortSignal.abort() }))).kind).toBe('aborted');
  });

  it('a program killed by a signal is kind signal', async () => {
    const err = await execError(exec(NODE, ['-e', 'process.kill(process.pid, "SIGKILL")']));
    expect(err.kind).toBe('signal');
    expect(err.signal).toBe('SIGKILL');
  });

  it('run() keeps its contract: a non-zero exit is a result', async () => {
    const r = await run(NODE, ['-e', 'process.stdout.write("out"); process.stderr.write("err"); process.exit(3)']);
    expect(r).toEqual({ code: 3, stdout: 'out', stderr: 'err' });
  });
});
