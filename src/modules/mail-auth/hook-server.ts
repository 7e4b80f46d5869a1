import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { chmodSync, chownSync, existsSync, unlinkSync } from 'node:fs';
import type { Logger } from 'pino';
import { serveRecords } from '../../shared/line-server.js';
import { limitConnections } from '../../shared/listener-limits.js';
import type { MailAuthService } from './mail-auth.service.js';

const MAX_LINE = 8192;

const unhex = (s: string): string | null => (/^(?:[0-9a-f]{2})*$/.test(s) ? Buffer.from(s, 'hex').toString('utf8') : null);
const hex = (s: string): string => Buffer.from(s, 'utf8').toString('hex');

/**
 * The socket Dovecot's Lua passdb asks (deploy/dovecot/mailsvc-auth.lua):
 *   AUTH\t<protocol>\t<remote ip>\t<hex user>\t<hex password>\n
 * answered by `OK\t<hex user>`, `FAIL` or `ERROR\t<reason>`, one line per request.
 */
export async function answerLine(line: string, auth: Pick<MailAuthService, 'check'>): Promise<string> {
  const [verb, protocol = '', remoteIp = '', hexUser = '', hexPass = '', ...rest] = line.split('\t');
  const user = unhex(hexUser);
  const password = unhex(hexPass);
  if (verb !== 'AUTH' || rest.length > 0 || user === null || password === null) return 'ERROR\tmalformed request';
  const r = await auth.check({ user, password, protocol: protocol.slice(0, 32), remoteIp: remoteIp.slice(0, 64) });
  return r.ok ? `OK\t${hex(r.user)}` : 'FAIL';
}

function serveConnection(socket: Socket, auth: Pick<MailAuthService, 'check'>, log: Logger): void {
  serveRecords(
    socket,
    // Each Dovecot auth-worker keeps one connection and writes one line per login on it;
    // a connection idle for idleMs is closed (the Lua script then connects again).
    { separator: '\n', maxRecordBytes: MAX_LINE, recordMs: 10_000, idleMs: 30_000 },
    async (line) => `${await answerLine(line.replace(/\r$/, ''), auth)}\n`,
    (err) => {
      log.error({ err: { message: err instanceof Error ? err.message : String(err) } }, 'mail auth hook failed');
      return 'ERROR\tinternal error\n';
    },
  );
}

export type HookListen = {
  socketPath?: string | undefined;
  socketGroup?: number | null | undefined;
  tcp?: { host: string; port: number } | undefined;
  /** Connections each listener holds at most (default 200). */
  maxConnections?: number | undefined;
};

/** Listens on a Unix socket (mode 0660) and/or a loopback TCP port. */
export async function startHookServer(listen: HookListen, auth: Pick<MailAuthService, 'check'>, log: Logger): Promise<{ servers: Server[]; close(): Promise<void> }> {
  const servers: Server[] = [];
  const start = (bind: (s: Server) => void): Promise<Server> =>
    new Promise((resolve, reject) => {
      const server = createServer((socket) => serveConnection(socket, auth, log));
      limitConnections(server, listen.maxConnections ?? 200, 'mail auth hook', log);
      server.once('error', reject);
      server.once('listening', () => resolve(server));
      bind(server);
    });
  if (listen.socketPath) {
    const path = listen.socketPath;
    if (existsSync(path)) unlinkSync(path);
    servers.push(await start((s) => s.listen(path)));
    // Owner and group only: the group is Dovecot's (MAILSVC_MAIL_AUTH_SOCKET_GROUP).
    if (listen.socketGroup !== null && listen.socketGroup !== undefined) chownSync(path, -1, listen.socketGroup);
    chmodSync(path, 0o660);
  }
  if (listen.tcp) {
    const { host, port } = listen.tcp;
    servers.push(await start((s) => s.listen(port, host)));
  }
  return {
    servers,
    close: () => Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r())))).then(() => undefined),
  };
}
