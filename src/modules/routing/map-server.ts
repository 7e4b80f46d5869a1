import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { SocketListen } from '../../config/mail-settings.js';
import { recordConnections, serveRecords } from '../../shared/line-server.js';
import type { RecordConnection } from '../../shared/line-server.js';
import { limitConnections } from '../../shared/listener-limits.js';
import { listenOn } from '../../shared/socket-listen.js';
import { LogThrottle } from '../../shared/log-throttle.js';
import { isPostfixMap } from './postfix-maps.js';
import type { PostfixMaps } from './postfix-maps.js';

// A request is a table name and an address (at most 320 bytes in SMTP): 4 KiB is plenty.
const MAX_REQUEST = 4096;
// Postfix's socketmap client reads replies of up to 100000 bytes.
const MAX_REPLY = 100_000;

const netstring = (text: string): string => `${Buffer.byteLength(text, 'utf8')}:${text},`;

/**
 * One socketmap request (`<name> <key>`) to its reply: `OK <value>`,
 * `NOTFOUND `, `TEMP <reason>` (Postfix defers: 4xx) or `PERM <reason>`.
 */
export async function answerRequest(request: string, maps: Pick<PostfixMaps, 'lookup'>): Promise<string> {
  const space = request.indexOf(' ');
  const name = space < 0 ? request : request.slice(0, space);
  const key = space < 0 ? '' : request.slice(space + 1);
  if (!isPostfixMap(name)) return `PERM no table named ${name.slice(0, 64).replace(/[^\x21-\x7e]/g, '?')}`;
  // Postfix folds keys to lower case; a key with control characters or spaces is no address.
  if (key === '' || [...key].some((c) => c <= ' ' || c === '\x7f')) return 'NOTFOUND ';
  const value = await maps.lookup(name, key.toLowerCase());
  if (value === null) return 'NOTFOUND ';
  if (Buffer.byteLength(value, 'utf8') + 3 > MAX_REPLY) return 'PERM answer too long for Postfix';
  return `OK ${value}`;
}

function serve(socket: Socket, maps: Pick<PostfixMaps, 'lookup'>, log: Logger, refusals: LogThrottle, failures: LogThrottle): RecordConnection {
  return serveRecords(
    socket,
    // Postfix writes a request at once, and closes a connection idle for 10 s
    // (a socketmap table's max-idle): 120 s leaves it the first move.
    { separator: { netstring: true }, maxRecordBytes: MAX_REQUEST, recordMs: 10_000, idleMs: 120_000 },
    async (request) => {
      const reply = await answerRequest(request, maps);
      if (reply.startsWith('PERM')) {
        const held = refusals.admit('perm');
        if (held !== null) log.warn({ reply: reply.slice(0, 120), suppressed: held }, 'postfix maps: request refused');
      }
      return netstring(reply);
    },
    (err) => {
      // The database did not answer: Postfix defers the mail (4xx) and the sender retries; nothing is lost.
      const held = failures.admit('temp');
      if (held !== null) log.error({ err: { message: err instanceof Error ? err.message : String(err) }, suppressed: held }, 'postfix maps: lookup failed; Postfix defers the mail');
      return netstring('TEMP lookup failed');
    },
  );
}

export type MapServer = { server: Server; path: string | null; port: number; close(): Promise<void> };

/**
 * Serves mailsvc's Postfix lookup tables over the socketmap protocol on a
 * Unix socket (mode 0660, the group Postfix runs as) or a loopback port.
 * Postfix then needs no access to the database: it learns whether an address
 * is a mailbox, an alias or a login's sender, and nothing else.
 */
export async function startMapServer(listen: SocketListen, maps: Pick<PostfixMaps, 'lookup'>, log: Logger, opts: { maxConnections?: number } = {}): Promise<MapServer> {
  const refusals = new LogThrottle(60_000);
  const failures = new LogThrottle(60_000);
  const connections = recordConnections();
  const server = createServer((s) => connections.add(s, serve(s, maps, log, refusals, failures)));
  limitConnections(server, opts.maxConnections ?? 200, 'postfix maps', log);
  const { path, port } = await listenOn(server, listen);
  return {
    server,
    path,
    port,
    close: () => {
      const closed = new Promise<void>((r) => server.close(() => r()));
      // Postfix's proxymap keeps its connections: each is ended once its request is answered.
      connections.closeAll();
      return closed;
    },
  };
}
