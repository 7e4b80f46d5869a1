import { exec } from '../exec.js';
import { startLineBatches } from '../exec-lines.js';
import type { StartedLines } from '../exec-lines.js';

/** One message as `postqueue -j` prints it (one JSON object per line). */
export type PostqueueMessage = {
  queue_name: string;
  queue_id: string;
  /** Seconds since the epoch. */
  arrival_time: number;
  message_size: number;
  forced_expire: boolean;
  sender: string;
  recipients: { address: string; delay_reason?: string }[];
};

/** A line postqueue printed that is not a queue entry: the adapter's caller decides what that means. */
export class PostqueueFormatError extends Error {}

function isRecipient(v: unknown): v is { address: string; delay_reason?: string } {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  return typeof r.address === 'string' && (r.delay_reason === undefined || typeof r.delay_reason === 'string');
}

/** Reads one `postqueue -j` line; throws PostqueueFormatError when it is not one queue entry. */
export function parsePostqueueLine(line: string): PostqueueMessage {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    throw new PostqueueFormatError(`postqueue -j printed a line that is not JSON: ${line.slice(0, 80)}`);
  }
  const m = (typeof v === 'object' && v !== null ? v : {}) as Record<string, unknown>;
  if (
    typeof m.queue_name !== 'string' || typeof m.queue_id !== 'string' || typeof m.arrival_time !== 'number' ||
    typeof m.message_size !== 'number' || typeof m.sender !== 'string' || !Array.isArray(m.recipients) || !m.recipients.every(isRecipient)
  ) {
    throw new PostqueueFormatError(`postqueue -j printed an entry without the expected fields: ${line.slice(0, 80)}`);
  }
  // The object is JSON.parse's own, made for this line: completed in place rather than copied.
  m.forced_expire = m.forced_expire === true;
  return m as PostqueueMessage;
}

const startPostqueueJson = (configDir: string, timeoutMs = 300_000): StartedLines => startLineBatches('postqueue', ['-c', configDir, '-j'], { timeoutMs });

/**
 * `postqueue -c DIR -j` started now, read by a later `scanQueue` for the same
 * directory: a caller that knows the directory before it is ready to read (a
 * CLI command still loading, docs/performance.md) lets postqueue work
 * meanwhile. What postqueue prints before then waits in the pipe; a full pipe
 * makes it wait. `close` stops it when no scan read it to its end.
 */
export class StartedPostqueue {
  private lines: StartedLines | null;

  constructor(
    readonly configDir: string,
    opts: { timeoutMs?: number } = {},
  ) {
    this.lines = startPostqueueJson(configDir, opts.timeoutMs);
  }

  /** Its output, for the one scan of this directory that reads it; null for any other (which runs its own). */
  take(configDir: string): StartedLines | null {
    const lines = configDir === this.configDir ? this.lines : null;
    if (lines) this.lines = null;
    return lines;
  }

  close(): void {
    this.lines?.stop();
    this.lines = null;
  }
}

/**
 * `postqueue -c DIR -j`, read line by line: each entry goes to `visit` as it
 * arrives (synchronously, all that was read in one go, so there is no promise
 * per entry or per read), memory stays flat
 * however long the queue is, and `visit` returning false stops postqueue early.
 * `started`: a postqueue already running for this directory (StartedPostqueue), read instead of a new one.
 * Ends with an ExecError when postqueue fails (the mail system is down, a
 * wrong configuration directory), a PostqueueFormatError on a line it cannot read.
 */
export async function scanQueue(
  configDir: string,
  visit: (m: PostqueueMessage) => boolean | void,
  opts: { timeoutMs?: number; started?: StartedPostqueue | undefined } = {},
): Promise<void> {
  const run = opts.started?.take(configDir) ?? startPostqueueJson(configDir, opts.timeoutMs);
  await run.each((lines) => {
    for (const line of lines) if (line.trim() !== '' && visit(parsePostqueueLine(line)) === false) return false;
  });
}

/**
 * `postqueue -c DIR -i ID`: asks the queue manager to try the message now
 * (through Postfix's flush service). Needs no root; a missing id is not an error for postqueue.
 */
export async function scheduleNow(configDir: string, queueId: string): Promise<void> {
  await exec('postqueue', ['-c', configDir, '-i', queueId], { timeoutMs: 30_000 });
}

/** `postqueue -c DIR -f`: every deferred message is tried now. */
export async function flushQueue(configDir: string): Promise<void> {
  await exec('postqueue', ['-c', configDir, '-f'], { timeoutMs: 60_000 });
}

/**
 * The count postsuper reports on stderr for one kind of action, e.g. 2 for
 * "postsuper: Deleted: 2 messages". postsuper exits 0 whether or not the ids
 * were in the queue: this count is the only way to know. Null when the line is
 * missing (a postsuper that prints something else).
 */
export function postsuperCount(stderr: string, label: 'Placed on hold' | 'Released from hold' | 'Deleted' | 'Force-expired'): number | null {
  const m = new RegExp(`^postsuper: ${label}: (\\d+) messages?$`, 'm').exec(stderr);
  return m ? Number(m[1]) : null;
}

/** The ids postsuper named on its per-message lines ("postsuper: 4B0A6210E3F: expired"). */
export function postsuperIds(stderr: string): Set<string> {
  const ids = new Set<string>();
  for (const m of stderr.matchAll(/^postsuper: ([0-9A-Za-z]+): [a-z ]+$/gm)) if (m[1]) ids.add(m[1]);
  return ids;
}
