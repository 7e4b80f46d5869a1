import { readFileSync } from 'node:fs';
import type { Server } from 'node:net';
import type { Logger } from 'pino';
import { LogThrottle } from './log-throttle.js';

/**
 * Caps the connections one listener holds: past `max`, Node accepts and at
 * once closes each new connection, so its descriptor is freed and the rest of
 * the process (the API above all) keeps descriptors to work with. One warning
 * a minute per listener says so, with the number refused meanwhile.
 */
export function limitConnections(server: Server, max: number, listener: string, log: Logger): void {
  server.maxConnections = max;
  const throttle = new LogThrottle(60_000);
  let refused = 0;
  server.on('drop', () => {
    refused++;
    const held = throttle.admit(listener);
    if (held === null) return;
    log.warn({ listener, max_connections: max, refused }, `${listener}: connection limit reached, new connections are refused`);
    refused = 0;
  });
}

/** The soft limit on open files of this process (Node raises it to the hard limit at start), or null. */
export function openFileLimit(limitsFile = '/proc/self/limits'): number | null {
  try {
    const line = readFileSync(limitsFile, 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const soft = line?.split(/\s{2,}/)[1];
    return soft && /^\d+$/.test(soft) ? Number(soft) : null;
  } catch {
    return null;
  }
}

/** Descriptors kept for the API, the database and Redis beyond the listeners' caps. */
export const API_RESERVE = 256;

/**
 * Warns at start when the listeners' connection caps leave the API fewer than
 * API_RESERVE descriptors (raise LimitNOFILE= in the systemd unit, or lower the caps).
 */
export function checkDescriptorBudget(caps: Record<string, number>, log: Logger, limit = openFileLimit()): boolean {
  if (limit === null) return true;
  const total = Object.values(caps).reduce((a, b) => a + b, 0);
  if (total + API_RESERVE <= limit) return true;
  log.warn({ open_file_limit: limit, listener_caps: caps, reserve: API_RESERVE },
    'the listeners may hold more descriptors than the open-file limit leaves the API: raise LimitNOFILE= or lower the MAILSVC_*_MAX_CONNECTIONS settings');
  return false;
}
