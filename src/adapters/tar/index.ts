import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, createReadStream, createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { minimalEnv } from '../exec.js';

export type Compression = 'gzip' | 'zstd' | 'none';
export { listTar } from './list.js';
export type { TarMember } from './list.js';

type Compressor = { file: string; args: string[] };

/**
 * The gzip program: pigz (parallel gzip, Debian package pigz) when it is on
 * the PATH, else gzip. Both write and read the same format, so either restores
 * the other's archives; pigz compresses on every core, as `zstd -T0` does
 * (the backup unit runs at Nice=10 with idle I/O, so mail keeps its share).
 */
export function gzipProgram(path: string = minimalEnv().PATH ?? ''): 'pigz' | 'gzip' {
  for (const dir of path.split(':')) {
    if (dir === '') continue;
    try {
      accessSync(join(dir, 'pigz'), constants.X_OK);
      return 'pigz';
    } catch {
      // not here
    }
  }
  return 'gzip';
}

let gzipFile: 'pigz' | 'gzip' | null = null;

/** The compressor of each kind: fast levels, because a nightly backup must keep up with the disk. */
function compressor(c: Exclude<Compression, 'none'>): Compressor {
  if (c === 'zstd') return { file: 'zstd', args: ['-3', '-q', '-c', '-T0'] };
  gzipFile ??= gzipProgram();
  return { file: gzipFile, args: ['-1', '-c'] };
}

export const archiveSuffix = (c: Compression): string => (c === 'gzip' ? '.tar.gz' : c === 'zstd' ? '.tar.zst' : '.tar');

export class TarError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TarError';
  }
}

export type TarProgress = { bytes: number; files: number };

export type CreateResult = {
  /** Bytes of uncompressed tar stream, and of the archive written. */
  bytesIn: number;
  size: number;
  sha256: string;
  files: number;
  /** tar's exit 1: a file changed or vanished while it was read (a live maildir); the archive is still valid. */
  changedWhileRead: string[];
};

function waitExit(child: ChildProcess, name: string, stderr: () => string): Promise<number> {
  const p = new Promise<number>((resolve, reject) => {
    child.on('error', (err) => reject(new TarError(`${name}: cannot run (${err.message})`)));
    child.on('close', (code, signal) => (code === null ? reject(new TarError(`${name} was ended by ${signal ?? 'a signal'}: ${stderr().slice(-300)}`)) : resolve(code)));
  });
  // Read later, or never when a stream failed first: never an unhandled rejection.
  p.catch(() => undefined);
  return p;
}

/** A stream of the pipeline failed (a full disk, a closed pipe): end the programs, wait for them, and report the stream's error. */
async function abandon(children: ChildProcess[], done: Promise<number>[], err: unknown): Promise<never> {
  for (const c of children) c.kill('SIGKILL');
  await Promise.allSettled(done);
  throw err;
}

/** Counts the bytes that pass and calls `tick` at most every 256 KiB. */
function counter(onBytes: (n: number) => void): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      onBytes(chunk.length);
      cb(null, chunk);
    },
  });
}

/**
 * Copies `source` into tar's stdin until `source` ends. tar stops reading at
 * the archive's end-of-archive blocks and may exit before the zero padding
 * after them arrives (pigz's output came late enough for that in one run out
 * of six): from then on the rest is read and dropped, so the archive is still
 * read (and hashed) to its end, and tar's exit status says whether it was
 * whole (a truncated archive makes tar fail).
 */
function feed(source: Readable, sink: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    let open = true;
    const stop = (): void => {
      if (!open) return;
      open = false;
      source.resume();
    };
    // Any error writing to tar (EPIPE) means tar is gone: its exit status is the verdict.
    sink.on('error', stop);
    sink.on('close', stop);
    source.on('data', (chunk: Buffer) => {
      if (open && !sink.write(chunk)) {
        source.pause();
        sink.once('drain', () => source.resume());
      }
    });
    source.on('end', () => {
      if (open) sink.end();
      resolve();
    });
    source.on('error', reject);
  });
}

/**
 * `tar --create --listed-incremental=<snar>` of `dir`'s contents into `file`,
 * compressed on the way, with the sha256 of the written file computed while it
 * is written. A new (empty) snapshot file makes a full (level 0) archive; the
 * parent's snapshot copied in makes an incremental. Exit 1 (a file changed as
 * it was read) is accepted and reported; exit 2 or a failing compressor rejects.
 */
export async function createArchive(opts: { dir: string; file: string; snapshot: string; compression: Compression; onProgress?: (p: TarProgress) => void; signal?: AbortSignal }): Promise<CreateResult> {
  const tar = spawn('tar', ['--create', '--file=-', '--verbose', `--directory=${opts.dir}`, `--listed-incremental=${opts.snapshot}`, '--numeric-owner', '.'], {
    env: minimalEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
    signal: opts.signal,
  });
  let files = 0;
  let bytesIn = 0;
  let tarErr = '';
  const changed: string[] = [];
  let pending = '';
  tar.stderr.setEncoding('utf8');
  tar.stderr.on('data', (d: string) => {
    pending += d;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (line.startsWith('tar: ')) {
        tarErr = (tarErr + line + '\n').slice(-4000);
        if (/file changed as we read it|file removed before we read it|file shrank/i.test(line)) changed.push(line.slice(5));
      } else if (line !== '' && !line.endsWith('/')) files++;
    }
  });
  const tarDone = waitExit(tar, 'tar', () => tarErr);
  const hash = createHash('sha256');
  let size = 0;
  const hashing = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      size += chunk.length;
      cb(null, chunk);
    },
  });
  const out = createWriteStream(opts.file, { mode: 0o600 });
  let last = 0;
  const count = counter((n) => {
    bytesIn += n;
    if (bytesIn - last >= 1 << 20) {
      last = bytesIn;
      opts.onProgress?.({ bytes: bytesIn, files });
    }
  });
  if (!tar.stdout) throw new TarError('tar: no output stream');
  if (opts.compression === 'none') {
    await pipeline(tar.stdout, count, hashing, out).catch((err: unknown) => abandon([tar], [tarDone], err));
  } else {
    const c = compressor(opts.compression);
    const comp = spawn(c.file, c.args, { env: minimalEnv(), stdio: ['pipe', 'pipe', 'pipe'], signal: opts.signal });
    let compErr = '';
    comp.stderr.setEncoding('utf8').on('data', (d: string) => (compErr = (compErr + d).slice(-1000)));
    const compDone = waitExit(comp, c.file, () => compErr);
    await Promise.all([pipeline(tar.stdout, count, comp.stdin), pipeline(comp.stdout, hashing, out)]).catch((err: unknown) => abandon([tar, comp], [tarDone, compDone], err));
    const code = await compDone;
    if (code !== 0) await abandon([tar], [tarDone], new TarError(`${c.file} exited ${code}: ${compErr.trim().slice(-300)}`));
  }
  const code = await tarDone;
  if (code !== 0 && code !== 1) throw new TarError(`tar exited ${code}: ${tarErr.trim().split('\n').slice(-3).join(' | ')}`);
  opts.onProgress?.({ bytes: bytesIn, files });
  return { bytesIn, size, sha256: hash.digest('hex'), files, changedWhileRead: changed };
}

/**
 * Extracts one archive of a chain into `dir` (`--listed-incremental=/dev/null`:
 * an incremental also removes what was deleted since its parent), keeping
 * names, contents, modes, owners and modification times.
 */
export async function extractArchive(opts: { file: string; dir: string; compression: Compression; onBytes?: (n: number) => void; signal?: AbortSignal }): Promise<{ sha256: string }> {
  // tar runs the decompressor itself (`--use-compress-program`, with `-d`): the decompressed stream goes from it
  // straight into tar over a pipe of their own, never through this process. Only the archive as stored passes
  // here, once, to be hashed on its way into tar. GNU tar also knows that a decompressor ended by SIGPIPE after
  // tar reached the archive's end is not a failure.
  const decompress = opts.compression === 'none' ? [] : [`--use-compress-program=${compressor(opts.compression).file}`];
  const tar = spawn('tar', ['--extract', '--file=-', ...decompress, `--directory=${opts.dir}`, '--listed-incremental=/dev/null', '--numeric-owner', '--preserve-permissions'], {
    env: minimalEnv(),
    stdio: ['pipe', 'ignore', 'pipe'],
    signal: opts.signal,
  });
  let tarErr = '';
  tar.stderr.setEncoding('utf8').on('data', (d: string) => (tarErr = (tarErr + d).slice(-4000)));
  const tarDone = waitExit(tar, 'tar', () => tarErr);
  const input = createReadStream(opts.file, { highWaterMark: 256 * 1024 });
  // The archive's sha256, computed as it is read: a caller checks it against the manifest without a second pass.
  const hash = createHash('sha256');
  const count = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      opts.onBytes?.(chunk.length);
      cb(null, chunk);
    },
  });
  if (!tar.stdin) throw new TarError('tar: no input stream');
  await Promise.all([pipeline(input, count), feed(count, tar.stdin)]).catch((err: unknown) => abandon([tar], [tarDone], err));
  const code = await tarDone;
  if (code !== 0) throw new TarError(`tar exited ${code} while extracting: ${tarErr.trim().split('\n').slice(-3).join(' | ')}`);
  return { sha256: hash.digest('hex') };
}

/** Plain `tar --create` of absolute paths (the configuration set): exists-checked by the caller; members keep their absolute names minus the leading "/". */
export async function createPlainArchive(opts: { paths: string[]; file: string; compression: Compression }): Promise<CreateResult> {
  const snapshotless = spawn('tar', ['--create', '--file', opts.file, '--numeric-owner', '--ignore-failed-read', '--directory=/', ...opts.paths.map((p) => p.replace(/^\/+/, ''))], { env: minimalEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  snapshotless.stderr.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-2000)));
  const code = await waitExit(snapshotless, 'tar', () => err);
  if (code !== 0 && code !== 1) throw new TarError(`tar exited ${code}: ${err.trim().slice(-300)}`);
  const hash = createHash('sha256');
  let size = 0;
  await pipeline(createReadStream(opts.file), new Transform({ transform(c: Buffer, _e, cb) { hash.update(c); size += c.length; cb(); } }));
  return { bytesIn: size, size, sha256: hash.digest('hex'), files: 0, changedWhileRead: [] };
}

/**
 * Extracts a plain archive (createPlainArchive's) into `dir`, a root-only
 * staging directory, never the live location: every file owned by the
 * extracting user, modes masked by the umask (no setuid bit, no foreign owner
 * lands even there); the caller applies the modes and owners it checked from
 * the archive's listing (listTar).
 */
export async function extractPlainArchive(opts: { file: string; dir: string }): Promise<void> {
  const tar = spawn('tar', ['--extract', '--file', opts.file, `--directory=${opts.dir}`, '--numeric-owner', '--no-same-permissions', '--no-same-owner'], { env: minimalEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  tar.stderr.setEncoding('utf8').on('data', (d: string) => (err = (err + d).slice(-2000)));
  const code = await waitExit(tar, 'tar', () => err);
  if (code !== 0) throw new TarError(`tar exited ${code} while extracting ${opts.file}: ${err.trim().split('\n').slice(-3).join(' | ')}`);
}
