import { execFile } from 'node:child_process';

export type ExecResult = { code: number; stdout: string; stderr: string };

/**
 * The one way this service runs a program: an argument array (never a shell),
 * a timeout, and capped output. A non-zero exit is a result, not an exception;
 * a program that cannot be started is an exception.
 */
export function run(file: string, args: readonly string[], opts: { timeoutMs?: number; maxBytes?: number } = {}): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      [...args],
      { timeout: opts.timeoutMs ?? 10_000, maxBuffer: opts.maxBytes ?? 1024 * 1024, encoding: 'utf8', shell: false },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') {
          reject(err);
          return;
        }
        resolve({ code: err ? Number(err.code) : 0, stdout, stderr });
      },
    );
  });
}
