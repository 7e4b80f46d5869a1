import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { chmodSync, chownSync, existsSync, unlinkSync } from 'node:fs';
import type { Logger } from 'pino';
import { recordConnections, serveRecords } from '../../shared/line-server.js';
import type { RecordConnection } from '../../shared/line-server.js';
import { limitConnections } from '../../shared/listener-limits.js';
import type { MailAuthService } from './mail-auth.service.js';

const MAX_LINE = 8192;

const unhex = (s: string): string | null => (/^(?:[0-9a-f]{2})*$/.test(s) ? Buffer.from(s, 'hex').toString('utf8') : null);
const hex = (s: string): string => Buffer.from(s, 'utf8').toString('hex');

/** An answer line, and the bookkeeping to start once it is written (the app password's last use). */
export type HookAnswer = string | { text: string; afterWrite: () => Promise<void> };

/**
 * The socket Dovecot's Lua passdb asks (deploy/dovecot/mailsvc-auth.lua):
 *   AUTH\t<protocol>\t<remote ip>\t<hex user>\t<hex password>[\tuserdb]\n
 * answered by `OK\t<hex user>`, `FAIL` or `ERROR\t<reason>`, one line per request.
 * A request ending in `\tuserdb` (the Lua script since the prefetch userdb)
 * gets the account's userdb fields after the user on OK, each `\t<hex name=value>`:
 * what deploy/dovecot's SQL user_query returns for that account, `user` always,
 * `quota_rule` when it has a quota. Dovecot's prefetch userdb then takes them
 * and skips the SQL userdb. A request without it (an older Lua script) gets the
 * short answer it understands.
 */
export async function answerLine(line: string, auth: Pick<MailAuthService, 'check'>): Promise<HookAnswer> {
  const [verb, protocol = '', remoteIp = '', hexUser = '', hexPass = '', options, ...rest] = line.split('\t');
  const user = unhex(hexUser);
  const password = unhex(hexPass);
  const withUserdb = options === 'userdb';
  if (verb !== 'AUTH' || rest.length > 0 || (options !== undefined && !withUserdb) || user === null || password === null) return 'ERROR\tmalformed request';
  const r = await auth.check({ user, password, protocol: protocol.slice(0, 32), remoteIp: remoteIp.slice(0, 64) });
  if (!r.ok) return 'FAIL';
  const text = withUserdb ? ['OK', hex(r.user), ...userdbFields(r).map(hex)].join('\t') : `OK\t${hex(r.user)}`;
  return r.afterAnswer ? { text, afterWrite: r.afterAnswer } : text;
}

/** The userdb fields of an accepted login, as deploy/dovecot/dovecot-sql.*.conf.ext's user_query makes them. */
function userdbFields(r: { user: string; quotaBytes: number }): string[] {
  return [`user=${r.user}`, ...(r.quotaBytes > 0 ? [`quota_rule=*:bytes=${r.quotaBytes}`] : [])];
}

function serveConnection(socket: Socket, auth: Pick<MailAuthService, 'check'>, log: Logger, pending: Set<Promise<void>>): RecordConnection {
  return serveRecords(
    socket,
    // Each Dovecot auth-worker keeps one connection and writes one line per login on it;
    // a connection idle for idleMs is closed (the Lua script then connects again).
    { separator: '\n', maxRecordBytes: MAX_LINE, recordMs: 10_000, idleMs: 30_000 },
    async (line) => {
      const answer = await answerLine(line.replace(/\r$/, ''), auth);
      if (typeof answer === 'string') return `${answer}\n`;
      // Started once the answer is written; close() waits for what is still running.
      const afterWrite = (): void => {
        const work = answer.afterWrite().catch((err: unknown) => log.error({ err: { message: err instanceof Error ? err.message : String(err) } }, 'mail auth hook: work after the answer failed'));
        pending.add(work);
        void work.finally(() => pending.delete(work));
      };
      return { text: `${answer.text}\n`, afterWrite };
    },
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
  const pending = new Set<Promise<void>>();
  const connections = recordConnections();
  const start = (bind: (s: Server) => void): Promise<Server> =>
    new Promise((resolve, reject) => {
      const server = createServer((socket) => connections.add(socket, serveConnection(socket, auth, log, pending)));
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
    close: async () => {
      const closed = Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
      // The auth-workers keep their connections: each is ended once its login is answered, not at its idle timeout.
      connections.closeAll();
      await closed;
      await Promise.all(pending);
    },
  };
}
