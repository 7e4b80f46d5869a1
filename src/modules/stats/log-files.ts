import { createReadStream, readdirSync, statSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';

/**
 * The Postfix log and its rotated files, and reading them from a byte
 * offset line by line. A file is known again by a hash of its first bytes
 * (its head), not by its name or inode: logrotate renames `mail.log` to
 * `mail.log.1` and later compresses it to `mail.log.2.gz`, and the head
 * survives both (for a `.gz` file, of the decompressed text).
 */

/** Where the collector stopped: which file (its head) and how many of its (decompressed) bytes were read. */
export type LogPosition = { head: string; headLength: number; offset: number };

export type LogFile = { path: string; gz: boolean; stat: Stats };

const HEAD_BYTES = 1024;
/** Bytes read at a time: big reads, few calls (the memory a run holds is a few of these). */
const CHUNK = 4 << 20;

/** The log and its rotations, oldest first: `log.N.gz` … `log.2.gz`, `log.1`, `log`. */
export function logFiles(path: string): LogFile[] {
  const dir = dirname(path);
  const base = basename(path);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const rotated = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.(\\d+)(\\.gz)?$`);
  const found: Array<{ path: string; gz: boolean; rank: number }> = [];
  for (const name of names) {
    if (name === base) found.push({ path, gz: false, rank: 0 });
    const m = rotated.exec(name);
    if (m) found.push({ path: join(dir, name), gz: m[2] !== undefined, rank: Number(m[1]) });
  }
  found.sort((a, b) => b.rank - a.rank);
  const files: LogFile[] = [];
  for (const f of found) {
    try {
      const stat = statSync(f.path);
      if (stat.isFile()) files.push({ path: f.path, gz: f.gz, stat });
    } catch {
      // Rotated away between the listing and now: the next run reads it under its new name.
    }
  }
  return files;
}

function open(file: LogFile, start = 0, highWaterMark = CHUNK): Readable {
  if (!file.gz) return createReadStream(file.path, { start, highWaterMark });
  return createReadStream(file.path, { highWaterMark: 1 << 20 }).pipe(createGunzip({ chunkSize: CHUNK }));
}

/** The hash of the first `length` bytes (or of what there is, with the length read). */
export async function headOf(file: LogFile, length = HEAD_BYTES): Promise<{ head: string; headLength: number }> {
  const parts: Buffer[] = [];
  let got = 0;
  const stream = open(file, 0, Math.max(length, 1));
  try {
    for await (const chunk of stream) {
      parts.push(chunk as Buffer);
      got += (chunk as Buffer).length;
      if (got >= length) break;
    }
  } finally {
    stream.destroy();
  }
  const bytes = Buffer.concat(parts).subarray(0, length);
  return { head: createHash('sha256').update(bytes).digest('hex'), headLength: bytes.length };
}

/** Whether `file` is the one `pos` describes: the same head, and at least as long as what was read of it. */
export async function isFile(file: LogFile, pos: LogPosition): Promise<boolean> {
  if (!file.gz && file.stat.size < pos.offset) return false;
  if (pos.headLength === 0) return !file.gz && file.stat.size >= pos.offset;
  const { head, headLength } = await headOf(file, pos.headLength);
  return headLength === pos.headLength && head === pos.head;
}

/**
 * Calls `onChunk` with each run of complete lines from byte `start` (about
 * 4 MiB at a time, the last newline included), as the bytes and their latin1
 * decoding (one character per byte: a character index is a byte offset);
 * returns the offset after the last complete line. A last line without its
 * newline is left for the next run (Postfix may be writing it now).
 * `afterChunk` runs after each chunk and reading waits for it.
 */
export async function readChunks(file: LogFile, start: number, onChunk: (text: string, bytes: Buffer) => void, afterChunk?: () => Promise<void>): Promise<number> {
  let offset = start;
  let carry: Buffer | null = null;
  // A .gz file is read from its beginning; the bytes before `start` are skipped.
  let skip = file.gz ? start : 0;
  for await (const raw of open(file, file.gz ? 0 : start)) {
    let chunk = raw as Buffer;
    if (skip > 0) {
      if (chunk.length <= skip) {
        skip -= chunk.length;
        continue;
      }
      chunk = chunk.subarray(skip);
      skip = 0;
    }
    const buf: Buffer = carry ? Buffer.concat([carry, chunk]) : chunk;
    const last = buf.lastIndexOf(10);
    if (last < 0) {
      carry = buf;
      continue;
    }
    const lines = buf.subarray(0, last + 1);
    onChunk(lines.toString('latin1'), lines);
    offset += last + 1;
    carry = last + 1 < buf.length ? Buffer.from(buf.subarray(last + 1)) : null;
    // Reading waits while the caller writes: memory stays flat however big the file.
    if (afterChunk) await afterChunk();
  }
  return offset;
}
