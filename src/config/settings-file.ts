import { readFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../shared/fs-atomic.js';

/** Reads a `KEY=VALUE` settings file; blank lines and `#` comments are skipped. */
export function readSettingsFile(path: string): Record<string, string> {
  if (!existsSync(path)) return {};
  const out: Record<string, string> = {};
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    out[line.slice(0, eq).trim()] = unquote(line.slice(eq + 1).trim());
  }
  return out;
}

function unquote(value: string): string {
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0]) {
    return value.slice(1, -1);
  }
  return value;
}

/**
 * Sets one key in the settings file, keeping every other line, through a temp
 * file in the same directory and a rename, so a reader never sees half a file.
 */
export function writeSettingsKey(path: string, key: string, value: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const lines = existsSync(path) ? readFileSync(path, 'utf8').split('\n') : [];
  if (lines.at(-1) === '') lines.pop();
  const entry = `${key}=${value}`;
  const at = lines.findIndex((l) => l.trim().startsWith(`${key}=`));
  if (at >= 0) lines[at] = entry;
  else lines.push(entry);
  // The file keeps its owner, group and mode: `mailsvc admin set-password` runs as root on a file
  // mailsvc install made root:mailsvc 0640, which the service must still read afterwards (never more than 0740).
  const before = existsSync(path) ? statSync(path) : null;
  writeFileAtomic(path, lines.join('\n') + '\n', before ? before.mode & 0o740 : 0o600, before ? { uid: before.uid, gid: before.gid } : undefined);
}

