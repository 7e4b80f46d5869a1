import { exec, minimalEnv } from '../exec.js';

/**
 * rclone (Debian's 1.60) configured only through `RCLONE_CONFIG_<NAME>_<KEY>`
 * environment variables given per call: RCLONE_CONFIG points at a file that
 * does not exist, so no rclone.conf on the host is read or written, and no
 * credential ever appears in argv.
 */
export type RcloneEnv = Readonly<Record<string, string>>;

const base = (env: RcloneEnv): Record<string, string> => minimalEnv({ RCLONE_CONFIG: '/nonexistent/mailsvc-rclone.conf', ...env });

/** One remote's settings as environment variables: `RCLONE_CONFIG_<NAME>_<KEY>=value` (names upper-cased as rclone reads them). */
export function remoteEnv(name: string, options: Readonly<Record<string, string>>): Record<string, string> {
  const n = name.toUpperCase().replace(/[^A-Z0-9_]/g, '_');
  return Object.fromEntries(Object.entries(options).map(([k, v]) => [`RCLONE_CONFIG_${n}_${k.toUpperCase()}`, v]));
}

/** `rclone obscure -`: the reversible form rclone wants for passwords in its config (the value travels on stdin). */
export async function obscure(plain: string): Promise<string> {
  const r = await exec('rclone', ['obscure', '-'], { input: plain, env: base({}), timeoutMs: 30_000 });
  return r.stdout.trim();
}

const common = ['--retries', '3', '--low-level-retries', '5', '--stats', '0'];

/** `rclone copy <src> <dst>`: uploads (or downloads) a directory; exit status checked. */
export async function copy(src: string, dst: string, env: RcloneEnv, opts: { timeoutMs?: number; signal?: AbortSignal; exclude?: string; include?: string } = {}): Promise<void> {
  const filter = [...(opts.exclude ? ['--exclude', opts.exclude] : []), ...(opts.include ? ['--include', opts.include] : [])];
  await exec('rclone', ['copy', ...common, ...filter, '--', src, dst], { env: base(env), timeoutMs: opts.timeoutMs ?? 0, signal: opts.signal, maxOutputBytes: 4 << 20 });
}

/** `rclone cat`: one (small) remote file's content, decrypted when the path is on a crypt remote. */
export async function cat(path: string, env: RcloneEnv): Promise<string> {
  const r = await exec('rclone', ['cat', ...common, '--', path], { env: base(env), timeoutMs: 120_000, maxOutputBytes: 16 << 20 });
  return r.stdout;
}

/**
 * Checks that `dst` holds exactly what `src` holds. For a crypt remote
 * `cryptcheck` encrypts each local file with the remote file's nonce and
 * compares checksums (plain `check` could only compare sizes there).
 */
export async function check(src: string, dst: string, env: RcloneEnv, opts: { crypt: boolean; timeoutMs?: number } = { crypt: false }): Promise<void> {
  const run = (args: string[]) => exec('rclone', [...args, '--one-way', ...common, '--', src, dst], { env: base(env), timeoutMs: opts.timeoutMs ?? 0, maxOutputBytes: 4 << 20 });
  try {
    await run([opts.crypt ? 'cryptcheck' : 'check']);
  } catch (err) {
    // A backend without checksums (WebDAV, FTP): compare the content itself, read back (and decrypted) from the remote.
    if (!(err instanceof Error && /does not support any hashes|no hashes in common/i.test(err.message))) throw err;
    await run(['check', '--download']);
  }
}

export type RemoteEntry = { Path: string; Name: string; Size: number; IsDir: boolean; ModTime: string };

/** `rclone lsjson`: what a remote directory holds. */
export async function lsjson(path: string, env: RcloneEnv, opts: { recursive?: boolean; dirsOnly?: boolean } = {}): Promise<RemoteEntry[]> {
  const r = await exec('rclone', ['lsjson', ...(opts.recursive ? ['-R'] : []), ...(opts.dirsOnly ? ['--dirs-only'] : []), '--', path], { env: base(env), timeoutMs: 120_000, maxOutputBytes: 16 << 20 });
  return JSON.parse(r.stdout) as RemoteEntry[];
}

/** `rclone purge`: removes a remote directory and everything in it (retention on a remote). */
export async function purge(path: string, env: RcloneEnv): Promise<void> {
  await exec('rclone', ['purge', ...common, '--', path], { env: base(env), timeoutMs: 600_000 });
}
