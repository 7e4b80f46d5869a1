import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { basename } from 'node:path';

/** Why a dump or restore tool failed: its name, exit status and the tail of its stderr (never its arguments: they may hold a host or user). */
export class DumpToolError extends Error {
  constructor(readonly program: string, readonly code: number | null, readonly stderr: string) {
    const tail = stderr.trim().split('\n').slice(-3).join(' | ').slice(0, 500);
    super(`${basename(program)} ${code === null ? 'could not run or was killed' : `exited ${code}`}${tail ? `: ${tail}` : ''}`);
    this.name = 'DumpToolError';
  }
}

export type ToolRun = { file: string; args: string[]; env: Record<string, string>; stdinFile?: string; stdoutFile?: string; signal?: AbortSignal };

/**
 * Runs a dump or restore program with stdin/stdout bound to files (a dump of
 * gigabytes never passes through this process) and checks its exit status:
 * anything but 0 is a DumpToolError, so a failed dump is never a success.
 */
export function runTool(run: ToolRun): Promise<void> {
  return new Promise((resolve, reject) => {
    const fds: number[] = [];
    let stdin: number | 'ignore' = 'ignore';
    let stdout: number | 'ignore' = 'ignore';
    try {
      if (run.stdinFile) fds.push((stdin = openSync(run.stdinFile, 'r')));
      if (run.stdoutFile) fds.push((stdout = openSync(run.stdoutFile, 'w', 0o600)));
    } catch (err) {
      for (const fd of fds) closeSync(fd);
      reject(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    const child = spawn(run.file, run.args, { env: run.env, stdio: [stdin, stdout, 'pipe'], signal: run.signal });
    for (const fd of fds) closeSync(fd);
    let stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (d: string) => {
      stderr = (stderr + d).slice(-4000);
    });
    child.on('error', (err) => reject(new DumpToolError(run.file, null, err.message)));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new DumpToolError(run.file, code, stderr))));
  });
}
