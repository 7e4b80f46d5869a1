import { existsSync } from 'node:fs';
import { readFile, statfs } from 'node:fs/promises';
import { connect } from 'node:net';
import { exec } from '../exec.js';
import type { ExecOptions, ExecResult } from '../exec.js';

/** Any exit status is an answer here (systemctl is-active exits 3 for inactive). */
const ANY_CODE = Array.from({ length: 256 }, (_, i) => i);
const execAnyCode = (file: string, args: readonly string[], opts: ExecOptions): Promise<ExecResult> => exec(file, args, { ...opts, okCodes: ANY_CODE });

/**
 * The host facts the performance report and topology read: service states
 * (systemctl), program versions, disk and memory, sizes (du), and whether a
 * TCP address answers. Argv in, typed result out; no judgement here.
 */

/** `systemctl is-active <unit>`: active, inactive, failed … ; null when systemctl cannot tell (no systemd, not installed). */
export async function serviceState(unit: string, timeoutMs: number): Promise<string | null> {
  const r = await execAnyCode('systemctl', ['is-active', unit], { timeoutMs }).catch(() => null);
  const state = r?.stdout.trim() ?? '';
  // "unknown" is what systemctl prints for a unit it has never heard of; no output means no systemd to ask.
  return state === '' || state === 'unknown' ? null : state;
}

/** The first line of a program's version output matching `pattern` (group 1), or null when it cannot run. */
export async function programVersion(file: string, args: readonly string[], pattern: RegExp, timeoutMs: number): Promise<string | null> {
  const r = await execAnyCode(file, args, { timeoutMs }).catch(() => null);
  if (!r) return null;
  return pattern.exec(`${r.stdout}\n${r.stderr}`)?.[1] ?? null;
}

export type DiskUsage = { path: string; total_bytes: number; used_bytes: number; used_percent: number };

export async function diskUsage(path: string): Promise<DiskUsage> {
  const s = await statfs(path);
  const total = s.blocks * s.bsize;
  // As df: used against what an unprivileged user can have (used + available), so 100 % means full for the service.
  const used = (s.blocks - s.bfree) * s.bsize;
  const usable = used + s.bavail * s.bsize;
  return { path, total_bytes: total, used_bytes: used, used_percent: usable === 0 ? 0 : Math.round((used / usable) * 1000) / 10 };
}

export type Memory = { total_bytes: number; available_bytes: number; used_percent: number };

export async function memory(): Promise<Memory> {
  const text = await readFile('/proc/meminfo', 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  const total = kb('MemTotal');
  const available = kb('MemAvailable');
  return { total_bytes: total, available_bytes: available, used_percent: Math.round(((total - available) / total) * 1000) / 10 };
}

/** `du -sb <path>`: bytes under a directory tree. Throws ExecError (a permission error is `exit`). */
export async function directorySize(path: string, timeoutMs: number): Promise<number> {
  const r = await exec('du', ['-sb', '--', path], { timeoutMs });
  return Number(r.stdout.split('\t')[0]);
}

/** Whether a TCP address accepts a connection: 'open', 'refused' (nothing listens) or 'timeout'. */
export function tcpReachable(host: string, port: number, timeoutMs: number): Promise<'open' | 'refused' | 'timeout'> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const done = (r: 'open' | 'refused' | 'timeout') => {
      clearTimeout(timer);
      s.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done('timeout'), timeoutMs);
    s.once('connect', () => done('open'));
    s.once('error', () => done('refused'));
  });
}

/** Whether systemd runs this host (as sd_booted(3): /run/systemd/system exists). */
export function systemdRunning(): boolean {
  return existsSync('/run/systemd/system');
}

/** `systemctl show <unit> -p A -p B …` as a record; null when systemctl cannot run or tell. */
export async function unitProperties(unit: string, props: readonly string[], timeoutMs: number, options: readonly string[] = []): Promise<Record<string, string> | null> {
  const r = await execAnyCode('systemctl', ['show', unit, ...options, ...props.flatMap((p) => ['-p', p])], { timeoutMs }).catch(() => null);
  if (!r || r.code !== 0) return null;
  return parseUnitProperties(r.stdout);
}

/** `Key=Value` lines (the output of `systemctl show`). */
export function parseUnitProperties(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1).trim();
  }
  return out;
}
