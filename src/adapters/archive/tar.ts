import { run } from '../exec.js';

export type TarResult = { ok: true } | { ok: false; detail: string };

/** `tar -czf <target> -C <dir> <entry>`: a gzip'd tar of one directory; a failure says why (tar's stderr). */
export async function createTarGz(dir: string, entry: string, target: string): Promise<TarResult> {
  const r = await run('tar', ['-czf', target, '-C', dir, '--', entry], { timeoutMs: 30_000 });
  return r.code === 0 ? { ok: true } : { ok: false, detail: r.stderr.trim() || `tar exited ${r.code}` };
}
