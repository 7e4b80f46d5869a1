import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import type { Logger } from 'pino';
import { serveRecords } from '../../shared/line-server.js';
import { WINDOW_LABEL } from '../../shared/send-rate.js';
import type { SendLimitsService } from './send-limits.service.js';
import type { SendCounter } from './policy-counter.js';

const MAX_REQUEST = 16 * 1024;

/** One Postfix policy request (name=value lines) to its action. */
export async function decide(attrs: Map<string, string>, limits: SendLimitsService, counter: SendCounter, log: Logger): Promise<string> {
  const user = (attrs.get('sasl_username') ?? '').trim().toLowerCase();
  // Only authenticated senders are limited; everything else is for other restrictions.
  if (user === '') return 'DUNNO';
  const l = await limits.forUser(user);
  const over = await counter.take(user, l);
  if (over === null) return 'DUNNO';
  log.info({ user, window: over, limit: l[over] }, 'send rate limit reached: message deferred');
  return `450 4.7.1 Sending rate limit reached (${l[over]} messages ${WINDOW_LABEL[over]}); try again later`;
}

function parseRequest(block: string): Map<string, string> {
  const attrs = new Map<string, string>();
  for (const line of block.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) attrs.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return attrs;
}

function serve(socket: Socket, limits: SendLimitsService, counter: SendCounter, log: Logger): void {
  serveRecords(
    socket,
    { separator: '\n\n', maxBytes: MAX_REQUEST, idleMs: 300_000 },
    async (block) => `action=${await decide(parseRequest(block), limits, counter, log)}\n\n`,
    (err) => {
      // Never block mail because the counter store hiccuped; say so in the log.
      log.error({ err: { message: err instanceof Error ? err.message : String(err) } }, 'policy service error: message let through');
      return 'action=DUNNO\n\n';
    },
  );
}

export async function startPolicyServer(listen: { host: string; port: number }, limits: SendLimitsService, counter: SendCounter, log: Logger): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((s) => serve(s, limits, counter, log));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : listen.port;
  return { server, port, close: () => new Promise<void>((r) => server.close(() => r())) };
}
