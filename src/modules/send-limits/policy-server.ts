import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { PolicyListen } from '../../config/mail-settings.js';
import { recordConnections, serveRecords } from '../../shared/line-server.js';
import type { RecordConnection } from '../../shared/line-server.js';
import { WINDOW_LABEL } from '../../shared/send-rate.js';
import { limitConnections } from '../../shared/listener-limits.js';
import { listenOn } from '../../shared/socket-listen.js';
import { LogThrottle } from '../../shared/log-throttle.js';
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

/** The SMTP states in which Postfix's smtpd asks a policy service. */
const PROTOCOL_STATES = new Set(['CONNECT', 'EHLO', 'HELO', 'MAIL', 'RCPT', 'DATA', 'END-OF-MESSAGE', 'VRFY', 'ETRN']);

/** Why a record is not a Postfix SMTPD access policy request, or null when it is one. */
export function protocolError(attrs: Map<string, string>): string | null {
  if (attrs.get('request') !== 'smtpd_access_policy') return 'request is not smtpd_access_policy';
  if (!PROTOCOL_STATES.has(attrs.get('protocol_state') ?? '')) return 'no valid protocol_state';
  return null;
}

export type PolicyServerOptions = { maxConnections?: number; /** Told of each decision and its latency (for GET /metrics). */ onDecision?: (action: string, seconds: number) => void };
export type PolicyServer = { server: Server; port: number; path: string | null; close(): Promise<void> };

const DEFAULT_MAX_CONNECTIONS = 200;

function serve(socket: Socket, limits: SendLimitsService, counter: SendCounter, log: Logger, refusals: LogThrottle, onDecision: NonNullable<PolicyServerOptions['onDecision']>): RecordConnection {
  return serveRecords(
    socket,
    // Postfix writes each request at once (our main.cf snippet gives it 10 s) and closes
    // its idle connection after max_idle (60 s in the snippet): 120 s leaves it the first move.
    { separator: '\n\n', maxRecordBytes: MAX_REQUEST, recordMs: 10_000, idleMs: 120_000 },
    async (block) => {
      const attrs = parseRequest(block);
      const error = protocolError(attrs);
      if (error !== null) {
        // Postfix's protocol: on trouble, no reply; log and disconnect.
        const held = refusals.admit('protocol');
        if (held !== null) log.warn({ reason: error, suppressed: held }, 'policy service: not a Postfix policy request; connection closed');
        return null;
      }
      const started = performance.now();
      const action = await decide(attrs, limits, counter, log);
      onDecision(action, (performance.now() - started) / 1000);
      return `action=${action}\n\n`;
    },
    (err) => {
      // Never block mail because the counter store hiccuped; say so in the log.
      log.error({ err: { message: err instanceof Error ? err.message : String(err) } }, 'policy service error: message let through');
      return 'action=DUNNO\n\n';
    },
  );
}

/**
 * Listens on a loopback TCP port, or on a Unix socket (mode 0660, given the
 * group Postfix's smtpd runs as) so that only Postfix can ask.
 */
export async function startPolicyServer(
  listen: PolicyListen,
  limits: SendLimitsService,
  counter: SendCounter,
  log: Logger,
  opts: PolicyServerOptions = {},
): Promise<PolicyServer> {
  const refusals = new LogThrottle(60_000);
  const onDecision = opts.onDecision ?? (() => undefined);
  const connections = recordConnections();
  const server = createServer((s) => connections.add(s, serve(s, limits, counter, log, refusals, onDecision)));
  limitConnections(server, opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS, 'policy service', log);
  const { path, port } = await listenOn(server, listen);
  return {
    server,
    port,
    path,
    close: () => {
      const closed = new Promise<void>((r) => server.close(() => r()));
      // Postfix's smtpd keeps its connection between messages: each is ended once its request is answered.
      connections.closeAll();
      return closed;
    },
  };
}
