import { chmodSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { expect } from 'vitest';
import type { Db } from '../../src/db/database.js';
import { SEALED_COLUMNS } from '../../src/db/sealed-columns.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The installed command (package.json "bin"), as `npm run build` leaves it. */
export const CLI_BIN = join(REPO_ROOT, 'dist/bundle/mailsvc.js');

/** The CLI as test/global-setup.ts built it (once, before every test file). */
export function buildCli(): string {
  if (!existsSync(CLI_BIN)) throw new Error(`${CLI_BIN} is missing: the vitest globalSetup (npm run build) did not run`);
  return CLI_BIN;
}

export type CliResult = { code: number | null; stdout: string; stderr: string };

export type CliOptions = {
  /** The whole environment of the command besides PATH: nothing leaks in from the test process. */
  env?: Record<string, string>;
  /** Written to standard input, which is then closed. */
  input?: string;
  timeoutMs?: number;
  /** A command the CLI runs under (e.g. setpriv to another user), before `node`. */
  wrap?: readonly string[];
};

/** $1 the checkout, $2 the mount point; the rest is the command, run with the checkout bound there. */
const BIND_AND_EXEC = 'set -e; src=$1; at=$2; shift 2; mount --make-rprivate /; mount --bind "$src" "$at"; exec "$@"';
let mountPoint: string | undefined;

/**
 * The argv that runs `node dist/bundle/mailsvc.js <args>` under `wrap` (setpriv to another user): in a private
 * mount namespace where the checkout is bind-mounted at a 0755 temp directory, so the other user reaches the
 * bundle wherever the checkout is (a clone under /root, 0700, made node answer "Cannot find module"). Root only.
 */
export function wrappedCli(wrap: readonly string[], args: readonly string[]): string[] {
  if (mountPoint === undefined) {
    mountPoint = mkdtempSync(join(tmpdir(), 'mailsvc-checkout-'));
    chmodSync(mountPoint, 0o755);
  }
  return ['unshare', '-m', 'sh', '-c', BIND_AND_EXEC, 'sh', REPO_ROOT, mountPoint, ...wrap, process.execPath, join(mountPoint, 'dist/bundle/mailsvc.js'), ...args];
}

/** Runs `node dist/bundle/mailsvc.js <args>` in a clean environment and collects its output. */
export function runCli(args: string[], opts: CliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const [file, ...argv] = opts.wrap ? wrappedCli(opts.wrap, args) : [process.execPath, CLI_BIN, ...args];
    const child = spawn(file as string, argv, {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    // A safety net against a hung command, not a wait: a command that hashes a password (argon2id,
    // 19 MiB) takes seconds on a busy 2-core machine, and 25 s killed it there.
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}

/** The lines a command wrote on stderr, without the final newline. */
export function stderrLines(r: CliResult): string[] {
  return r.stderr.split('\n').filter((l) => l !== '');
}

/** The command's stdout, parsed (for `--json`). */
export const json = (r: CliResult): Record<string, unknown> => JSON.parse(r.stdout) as Record<string, unknown>;

/** Fails with what the command said when it did not exit 0. */
export function expectOk(r: CliResult): void {
  expect(r.code, r.stderr).toBe(0);
}

/** One line, "mailsvc: …", and nothing that looks like a stack trace; returns the line. */
export function expectOneErrorLine(r: CliResult): string {
  const lines = stderrLines(r);
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^mailsvc: /);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  return lines[0] ?? '';
}

export type SealedValue = { table: string; key: string | number; column: string; value: string };

/** Every sealed value in the database (SEALED_COLUMNS), with where it sits. */
export async function sealedValues(db: Db): Promise<SealedValue[]> {
  const out: SealedValue[] = [];
  for (const { table, key, column } of SEALED_COLUMNS) {
    const rows = await sql<{ k: string | number; v: string | null }>`select ${sql.ref(key)} as k, ${sql.ref(column)} as v from ${sql.table(table)}`.execute(db);
    for (const { k, v } of rows.rows) if (v !== null) out.push({ table, key: k, column, value: v });
  }
  return out;
}
