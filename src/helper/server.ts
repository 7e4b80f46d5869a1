import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { chmodSync, chownSync, existsSync, lstatSync, unlinkSync } from 'node:fs';
import type { Logger } from 'pino';
import { MAX_REQUEST_BYTES, formatLine, isAnswer, parseRequest } from './protocol.js';
import type { HelperAnswer } from './protocol.js';
import type { HelperRunner } from './runner.js';

/** Where to listen: a path the helper creates (mode 0660, `group`), or a socket systemd passed in (fd 3). */
export type HelperListen = { path: string; group: number | null } | { fd: number };

export type HelperServerOptions = {
  /** Connections at once; more are closed at once (the kernel queues a short backlog). */
  maxConnections?: number;
  /** Requests a connection may have waiting; more are answered `busy`. */
  maxPending?: number;
  idleMs?: number;
};

const NL = 0x0a;

/** One connection: lines in, one answer line each, in order; a line over the cap ends it. */
function serveConnection(socket: Socket, runner: HelperRunner, log: Logger, opts: Required<HelperServerOptions>): void {
  let buffered: Buffer[] = [];
  let size = 0;
  let pending = 0;
  let chain = Promise.resolve();
  const send = (answer: HelperAnswer): void => {
    if (!socket.destroyed) socket.write(formatLine(answer));
  };
  socket.setTimeout(opts.idleMs, () => socket.destroy());
  socket.on('error', () => undefined);
  const onLine = (line: string): void => {
    const request = parseRequest(line, (action) => runner.maxArgLength(action));
    if (isAnswer(request)) {
      // Answered in turn, so answers keep the order of the lines.
      chain = chain.then(() => send(request));
      return;
    }
    if (pending >= opts.maxPending) {
      chain = chain.then(() => send({ id: request.id, ok: false, error: 'busy', detail: `at most ${opts.maxPending} requests may wait on one connection` }));
      return;
    }
    pending += 1;
    chain = chain.then(async () => {
      try {
        send({ id: request.id, ...(await runner.answer(request.action, request.args)) });
      } catch (err) {
        log.error({ err: { message: err instanceof Error ? err.message : String(err) } }, 'helper action crashed');
        send({ id: request.id, ok: false, error: 'failed', detail: 'internal error in the helper' });
      } finally {
        pending -= 1;
      }
    });
  };
  socket.on('data', (chunk: Buffer) => {
    let start = 0;
    let nl: number;
    while ((nl = chunk.indexOf(NL, start)) >= 0) {
      buffered.push(chunk.subarray(start, nl));
      const line = Buffer.concat(buffered).toString('utf8').replace(/\r$/, '');
      buffered = [];
      size = 0;
      start = nl + 1;
      if (line.trim() !== '') onLine(line);
    }
    const rest = chunk.subarray(start);
    size += rest.length;
    if (size > MAX_REQUEST_BYTES) {
      buffered = [];
      socket.pause();
      chain = chain.then(() => {
        send({ id: null, ok: false, error: 'line-too-long', detail: `a request line holds at most ${MAX_REQUEST_BYTES} bytes` });
        socket.end();
        // A client that does not close its side is cut off after a moment.
        setTimeout(() => socket.destroy(), 1000).unref();
      });
      return;
    }
    if (rest.length > 0) buffered.push(rest);
  });
}

/** Starts the helper's socket server. */
export async function startHelperServer(
  listen: HelperListen,
  runner: HelperRunner,
  log: Logger,
  options: HelperServerOptions = {},
): Promise<{ server: Server; close(): Promise<void> }> {
  const opts: Required<HelperServerOptions> = { maxConnections: 16, maxPending: 4, idleMs: 60_000, ...options };
  const server = createServer((socket) => serveConnection(socket, runner, log, opts));
  server.maxConnections = opts.maxConnections;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.once('listening', () => resolve());
    if ('fd' in listen) {
      server.listen({ fd: listen.fd });
    } else {
      // A stale socket from an earlier run is removed; any other kind of file is left alone (listen fails).
      if (existsSync(listen.path) && lstatSync(listen.path).isSocket()) unlinkSync(listen.path);
      server.listen(listen.path);
    }
  });
  server.on('error', (err) => log.error({ err: { message: err.message } }, 'helper socket error'));
  if (!('fd' in listen)) {
    if (listen.group !== null) chownSync(listen.path, -1, listen.group);
    chmodSync(listen.path, 0o660);
  }
  return {
    server,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
