import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

export type StaticFile = { type: string; raw: Buffer; br: Buffer; gzip: Buffer; immutable: boolean };

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * The built panel (a few small files) read once into memory, each compressed
 * once with Brotli and gzip, so a request costs no disk read and no
 * compression. Files under assets/ carry a content hash in their names and
 * may be cached for good.
 */
export function loadPanelFiles(dir: string): Map<string, StaticFile> | null {
  if (!existsSync(join(dir, 'index.html'))) return null;
  const files = new Map<string, StaticFile>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const full = join(d, name);
      if (statSync(full).isDirectory()) {
        walk(full);
        continue;
      }
      const type = TYPES[extname(name)];
      if (!type) continue;
      const raw = readFileSync(full);
      const rel = relative(dir, full).split('\\').join('/');
      files.set(rel, {
        type,
        raw,
        br: brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length } }),
        gzip: gzipSync(raw, { level: 9 }),
        immutable: rel.startsWith('assets/'),
      });
    }
  };
  walk(dir);
  return files;
}

/** Brotli, else gzip, else none, from Accept-Encoding (q=0 honoured). */
export function pickEncoding(accept: string | undefined): 'br' | 'gzip' | null {
  const offered = new Map<string, number>();
  for (const part of (accept ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => /^\s*q=([\d.]+)/.exec(p)?.[1]).find((v) => v !== undefined);
    if (name) offered.set(name, q === undefined ? 1 : Number(q));
  }
  if ((offered.get('br') ?? 0) > 0) return 'br';
  if ((offered.get('gzip') ?? 0) > 0) return 'gzip';
  return null;
}
