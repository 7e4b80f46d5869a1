import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import type { Compression } from '../../adapters/tar/index.js';
import type { PhysicalInfo } from '../../adapters/db-dump/physical.js';

export const MANIFEST = 'manifest.json';
/** The verify result lives beside the manifest, never in it: the manifest is written once and never changes. */
export const VERIFY_FILE = 'verify.json';

export type Artifact = { name: string; kind: 'mail' | 'database' | 'config' | 'redis' | 'snapshot'; size: number; sha256: string };

export type Manifest = {
  format: 1;
  id: string;
  type: 'full' | 'incremental';
  /** The backup this incremental builds on (null for a full). */
  parent: string | null;
  /** Every backup a restore of this one needs, oldest (the full) first, this one last. */
  chain: string[];
  created_at: string;
  completed_at: string;
  versions: { mailsvc: string; tar: string };
  compression: Compression;
  mail: { root: string; files: number; bytes: number; changed_while_read: number };
  database: {
    dialect: string;
    mode: 'logical' | 'physical';
    schema: string | null;
    /** Rows per table: exactly the dump's (logical); counted just before the copy (physical). */
    tables: Record<string, number>;
    /** DB_MODE=physical on PostgreSQL or MariaDB: the tool, the server it copied, files and bytes of the copy. */
    physical?: PhysicalInfo & { files: number; bytes: number };
  };
  /** The key that sealed the database's secrets, and whether config.tar holds it (absent in older backups). */
  secrets?: { key_id: string | null; key_file_in_backup: boolean };
  redis: { included: boolean };
  /** What config.tar holds; settings_file and key_file: where those two were (a restore puts them at this host's paths). */
  config: { paths: string[]; settings_file?: string; key_file?: string };
  artifacts: Artifact[];
  timings_ms: Record<string, number>;
  warnings: string[];
};

export type VerifyResult = { verified_at: string; verify_ok: boolean; problems: string[] };

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), new Writable({ write(c: Buffer, _e, cb) { hash.update(c); cb(); } }));
  return hash.digest('hex');
}

/** A manifest from its text (`where` names it in the error); unauthenticated: a restore reads it through readSignedManifest. */
export function parseManifest(text: string, where: string): Manifest {
  let m: Manifest;
  try {
    m = JSON.parse(text) as Manifest;
  } catch {
    throw new Error(`${where} is not a mailsvc backup manifest (not JSON)`);
  }
  if (m === null || typeof m !== 'object' || m.format !== 1 || typeof m.id !== 'string' || !Array.isArray(m.artifacts) || !Array.isArray(m.chain)) throw new Error(`${where} is not a mailsvc backup manifest`);
  return m;
}

/** Unauthenticated: for listing only (the service, which cannot read the key, lists backups this way). */
export function readManifest(dir: string): Manifest {
  return parseManifest(readFileSync(join(dir, MANIFEST), 'utf8'), join(dir, MANIFEST));
}

export function readVerify(dir: string): VerifyResult | null {
  try {
    return JSON.parse(readFileSync(join(dir, VERIFY_FILE), 'utf8')) as VerifyResult;
  } catch {
    return null;
  }
}

/**
 * Every way the files in `dir` differ from its manifest: a missing artifact,
 * another size, another sha256. Empty when the backup is intact.
 */
export async function checkArtifacts(dir: string, m: Manifest, onBytes?: (n: number) => void, sizeOnly: Artifact['kind'][] = []): Promise<string[]> {
  const problems: string[] = [];
  for (const a of m.artifacts) {
    const path = join(dir, a.name);
    if (!existsSync(path)) {
      problems.push(`${m.id}/${a.name} is missing`);
      continue;
    }
    const size = statSync(path).size;
    if (size !== a.size) {
      problems.push(`${m.id}/${a.name} is ${size} bytes, the manifest says ${a.size}`);
      continue;
    }
    if (sizeOnly.includes(a.kind)) continue;
    const sum = await sha256File(path);
    onBytes?.(size);
    if (sum !== a.sha256) problems.push(`${m.id}/${a.name} does not match its sha256 in the manifest`);
  }
  return problems;
}
