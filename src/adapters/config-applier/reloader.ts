import { run } from '../exec.js';
import type { RunFn } from './checkers.js';
import type { DaemonReloader } from './types.js';

/**
 * Reloads a daemon by a fixed command per daemon name, for example
 * `{ postfix: ['postfix', '-c', '/etc/postfix', 'reload'] }`.
 */
export function commandReloader(commands: Readonly<Record<string, readonly [string, ...string[]]>>, exec: RunFn = run): DaemonReloader {
  return {
    async reload(daemon) {
      const argv = commands[daemon];
      if (!argv) throw new Error(`no reload command for ${daemon}`);
      const [file, ...args] = argv;
      const r = await exec(file, args, { timeoutMs: 60_000, maxBytes: 1024 * 1024 });
      if (r.code !== 0) throw new Error(`${file} exited ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    },
  };
}
