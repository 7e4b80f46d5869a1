import { closeSync, openSync, readSync } from 'node:fs';

/** One member of a tar archive as its header records it (nothing is extracted). */
export type TarMember = {
  name: string;
  type: 'file' | 'dir' | 'symlink' | 'hardlink' | 'char' | 'block' | 'fifo' | 'other';
  /** The full mode bits, setuid/setgid/sticky included. */
  mode: number;
  uid: number;
  gid: number;
  size: number;
  /** The target of a symbolic or hard link ('' otherwise). */
  linkname: string;
};

const TYPES: Record<string, TarMember['type']> = { '0': 'file', '\0': 'file', '7': 'file', '5': 'dir', '2': 'symlink', '1': 'hardlink', '3': 'char', '4': 'block', '6': 'fifo' };

const text = (b: Buffer, at: number, len: number): string => {
  const s = b.subarray(at, at + len);
  const end = s.indexOf(0);
  return s.subarray(0, end < 0 ? s.length : end).toString('utf8');
};

/** An octal field, or GNU's base-256 form (high bit of the first byte set). */
function num(b: Buffer, at: number, len: number): number {
  if ((b[at] ?? 0) & 0x80) {
    let v = 0;
    for (let i = 1; i < len; i++) v = v * 256 + (b[at + i] ?? 0);
    return v;
  }
  const s = text(b, at, len).trim();
  return s === '' ? 0 : parseInt(s, 8);
}

function pax(data: Buffer): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < data.length) {
    const sp = data.indexOf(0x20, i);
    if (sp < 0) break;
    const len = Number(data.subarray(i, sp).toString('ascii'));
    if (!Number.isInteger(len) || len <= 0) break;
    const rec = data.subarray(sp + 1, i + len - 1).toString('utf8');
    const eq = rec.indexOf('=');
    if (eq > 0) out[rec.slice(0, eq)] = rec.slice(eq + 1);
    i += len;
  }
  return out;
}

/**
 * Every member of an uncompressed tar archive (ustar, GNU long names, pax
 * headers), read from the headers alone: what a restore judges before it
 * extracts anything. Throws on a header whose checksum is wrong (a damaged or
 * crafted archive is never half-read).
 */
export function listTar(file: string): TarMember[] {
  const fd = openSync(file, 'r');
  const out: TarMember[] = [];
  try {
    const h = Buffer.alloc(512);
    let pos = 0;
    let longName: string | null = null;
    let longLink: string | null = null;
    let paxNext: Record<string, string> = {};
    const readData = (size: number): Buffer => {
      if (size > 16 * 1024 * 1024) throw new Error('a tar extension header larger than 16 MiB');
      const d = Buffer.alloc(size);
      if (readSync(fd, d, 0, size, pos) !== size) throw new Error('the archive ends inside a member');
      return d;
    };
    for (;;) {
      if (readSync(fd, h, 0, 512, pos) !== 512) break;
      if (h.every((x) => x === 0)) break;
      let sum = 0;
      for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : (h[i] ?? 0);
      if (sum !== num(h, 148, 8)) throw new Error(`a tar header at byte ${pos} has a wrong checksum`);
      const flag = String.fromCharCode(h[156] ?? 0);
      const size = num(h, 124, 12);
      pos += 512;
      const padded = Math.ceil(size / 512) * 512;
      if (flag === 'L' || flag === 'K' || flag === 'x' || flag === 'g') {
        const d = readData(size);
        if (flag === 'L') longName = text(d, 0, d.length);
        else if (flag === 'K') longLink = text(d, 0, d.length);
        else if (flag === 'x') paxNext = pax(d);
        pos += padded;
        continue;
      }
      const prefix = text(h, 257, 6) === 'ustar' ? text(h, 345, 155) : '';
      const name = paxNext.path ?? longName ?? (prefix ? `${prefix}/${text(h, 0, 100)}` : text(h, 0, 100));
      out.push({
        name,
        type: TYPES[flag] ?? 'other',
        mode: num(h, 100, 8),
        uid: paxNext.uid !== undefined ? Number(paxNext.uid) : num(h, 108, 8),
        gid: paxNext.gid !== undefined ? Number(paxNext.gid) : num(h, 116, 8),
        size: paxNext.size !== undefined ? Number(paxNext.size) : size,
        linkname: paxNext.linkpath ?? longLink ?? text(h, 157, 100),
      });
      const dataSize = paxNext.size !== undefined ? Number(paxNext.size) : size;
      // Links, directories and special files carry no data whatever their size field says.
      if (flag !== '1' && flag !== '2' && flag !== '5' && flag !== '3' && flag !== '4' && flag !== '6') pos += Math.ceil(dataSize / 512) * 512;
      longName = null;
      longLink = null;
      paxNext = {};
    }
  } finally {
    closeSync(fd);
  }
  return out;
}
