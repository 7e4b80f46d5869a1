import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { chmodSync, chownSync, existsSync, lstatSync, unlinkSync } from 'node:fs';
import type { Logger } from 'pino';
import { LogThrottle } from '../shared/log-throttle.js';
import { MAX_REQUEST_BYTES, formatLine, isAnswer, parseRequest } from './protocol.js';
import type { HelperAnswer } from './protocol.js';
import type { HelperRunner } from './runner.js';
import { peerCredAddon } from './peer-cred.js';
import { identifyPeer } from './peer-identity.js';
import type { Peer } from './peer-identity.js';
import { PeerLimits } from './peer-limits.js';

/** Where to listen: a path the helper creates (mode 0660, `group`), or a socket systemd passed in (fd 3). */
export type HelperListen = { path: string; group: number | null } | { fd: number };

export type HelperServerOptions = {
  /** Connections at once from unprivileged peers (docs/helper.md, Limits). */
  maxConnections?: number;
  /** Slots beyond maxConnections that only root and the service's own process may take. */
  reserve?: number;
  /** Connections one process may hold. */
  perPid?: number;
  /** Connections one uid other than root (and other than the service's own process) may hold. */
  perUid?: number;
  /** Requests a connection may have waiting; more are answered `busy`. */
  maxPending?: number;
  /** A connection with no complete request line this long after connecting is closed. */
  firstRequestMs?: number;
  /** A connection with nothing in flight and no request line for this long is closed. */
  idleMs?: number;
  /** The systemd unit of the service's own process (MAILSVC_HELPER_SERVICE_UNIT). */
  serviceUnit?: string;
  /** Connections waiting to be identified; more are refused before they are looked at. */
  maxIdentifying?: number;
  /** Finds a connection's peer (default: SO_PEERCRED and /proc/<pid>/cgroup, peer-identity.ts). */
  identify?: (socket: Socket) => Promise<Peer>;
};

type Options = Required<Omit<HelperServerOptions, 'identify'>>;

export const HELPER_SERVER_DEFAULTS: Options = {
  maxConnections: 16,
  reserve: 4,
  perPid: 4,
  perUid: 8,
  maxPending: 4,
  firstRequestMs: 5000,
  idleMs: 10_000,
  serviceUnit: 'mailsvc.service',
  maxIdentifying: 64,
};

/** At most this many connections are looked up at once; the others wait their turn. */
const IDENTIFY_AT_ONCE = 4;

const NL = 0x0a;

/**
 * One admitted connection: lines in, one answer line each, in order; a line
 * over the cap ends it. It is closed when no complete request line came within
 * `firstRequestMs` of connecting, or when nothing is in flight and no request
 * line came for `idleMs`; a request in flight keeps it open.
 */
function serveConnection(socket: Socket, runner: HelperRunner, log: Logger, opts: Options, connectedAt: number): void {
  let buffered: Buffer[] = [];
  let size = 0;
  let pending = 0;
  let inFlight = 0;
  let gotLine = false;
  let lastActive = connectedAt;
  let timer: NodeJS.Timeout | undefined;
  let chain = Promise.resolve();
  // Identification may have taken a while: the first request gets at least a second after reading starts.
  const firstDeadline = Math.max(connectedAt + opts.firstRequestMs, Date.now() + 1000);
  const deadline = (): number => (gotLine ? lastActive + opts.idleMs : firstDeadline);
  const arm = (): void => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (inFlight > 0 || socket.destroyed) return;
    timer = setTimeout(expire, Math.max(0, deadline() - Date.now()));
  };
  // A loaded host can stall this process past a deadline while the peer's request already waits in the socket:
  // the timer then fires before that input is read. So the connection is cut one turn of the event loop later
  // (setImmediate runs after the poll phase, which reads what is waiting), and only if no line came by then.
  function expire(): void {
    setImmediate(() => {
      if (inFlight > 0 || socket.destroyed) return;
      if (Date.now() >= deadline()) socket.destroy();
      else arm();
    });
  }
  const enqueue = (work: () => void | Promise<void>): void => {
    inFlight += 1;
    arm();
    chain = chain
      .then(work)
      .catch(() => undefined)
      .then(() => {
        inFlight -= 1;
        lastActive = Date.now();
        arm();
      });
  };
  const send = (answer: HelperAnswer): void => {
    if (!socket.destroyed) socket.write(formatLine(answer));
  };
  socket.once('close', () => {
    if (timer) clearTimeout(timer);
  });
  const onLine = (line: string): void => {
    gotLine = true;
    lastActive = Date.now();
    const request = parseRequest(line, (action) => runner.maxArgLength(action));
    if (isAnswer(request)) {
      // Answered in turn, so answers keep the order of the lines.
      enqueue(() => send(request));
      return;
    }
    if (pending >= opts.maxPending) {
      enqueue(() => send({ id: request.id, ok: false, error: 'busy', detail: `at most ${opts.maxPending} requests may wait on one connection` }));
      return;
    }
    pending += 1;
    enqueue(async () => {
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
      enqueue(() => {
        send({ id: null, ok: false, error: 'line-too-long', detail: `a request line holds at most ${MAX_REQUEST_BYTES} bytes` });
        socket.end();
        // A client that does not close its side is cut off after a moment.
        setTimeout(() => socket.destroy(), 1000).unref();
      });
      return;
    }
    if (rest.length > 0) buffered.push(rest);
  });
  arm();
  socket.resume();
}

/** Answers `busy` once, then closes: the peer is told which limit it met. */
function refuse(socket: Socket, detail: string): void {
  if (socket.destroyed) return;
  socket.once('finish', () => socket.destroy());
  socket.end(formatLine({ id: null, ok: false, error: 'busy', detail }));
  setTimeout(() => socket.destroy(), 1000).unref();
}

const describePeer = (peer: Peer): Record<string, unknown> => (peer.kind === 'unknown' ? { kind: 'unknown' } : { ...peer });

/**
 * Every connection is paused until its peer is known (peer-identity.ts), then
 * admitted or refused by the per-process, per-user and total limits
 * (peer-limits.ts) before a byte of it is read.
 */
function connectionHandler(runner: HelperRunner, log: Logger, opts: Options, identify: (socket: Socket) => Promise<Peer>): (socket: Socket) => void {
  const limits = new PeerLimits(opts);
  const throttle = new LogThrottle(60_000);
  let identifying = 0;
  let running = 0;
  const waiting: (() => void)[] = [];
  let unknownLogged = false;
  const refused = (socket: Socket, kind: string, detail: string, peer: Peer | null): void => {
    refuse(socket, detail);
    const held = throttle.admit(kind);
    if (held !== null) log.warn({ refused: kind, detail, peer: peer && describePeer(peer), refused_before_unlogged: held }, 'helper connection refused');
  };
  const identifyInTurn = async (socket: Socket): Promise<Peer> => {
    if (running >= IDENTIFY_AT_ONCE) await new Promise<void>((resolve) => waiting.push(resolve));
    running += 1;
    try {
      return await identify(socket);
    } catch (err) {
      return { kind: 'unknown', reason: err instanceof Error ? err.message : String(err) };
    } finally {
      running -= 1;
      waiting.shift()?.();
    }
  };
  return (socket) => {
    const connectedAt = Date.now();
    socket.on('error', () => undefined);
    if (identifying >= opts.maxIdentifying) {
      refused(socket, 'identifying', `${opts.maxIdentifying} connections are waiting to be identified`, null);
      return;
    }
    identifying += 1;
    void identifyInTurn(socket).then((peer) => {
      identifying -= 1;
      if (socket.destroyed) return;
      if (peer.kind === 'unknown' && !unknownLogged) {
        unknownLogged = true;
        log.warn({ reason: peer.reason }, 'helper: cannot tell who holds a connection; such peers count as unprivileged');
      }
      const admission = limits.admit(peer);
      if (!admission.ok) {
        refused(socket, admission.kind, admission.detail, peer);
        return;
      }
      socket.once('close', admission.release);
      log.debug({ peer: describePeer(peer), connections: limits.connections }, 'helper connection admitted');
      serveConnection(socket, runner, log, opts, connectedAt);
    });
  };
}

/** Starts the helper's socket server. */
export async function startHelperServer(
  listen: HelperListen,
  runner: HelperRunner,
  log: Logger,
  options: HelperServerOptions = {},
): Promise<{ server: Server; close(): Promise<void> }> {
  const { identify, ...numbers } = options;
  const opts: Options = { ...HELPER_SERVER_DEFAULTS, ...numbers };
  if (!identify) {
    const addon = peerCredAddon();
    // Said once, at start: without the addon every peer, root too, is unknown (unprivileged).
    if (!addon.ok) log.error({ reason: addon.reason }, 'helper: cannot identify the peers of its connections; all count as one unprivileged user until the addon is rebuilt');
  }
  const find = identify ?? ((socket: Socket) => identifyPeer(socket, { serviceUnit: opts.serviceUnit }));
  // Paused: nothing is read from a connection before its peer is known and admitted.
  const server = createServer({ pauseOnConnect: true }, connectionHandler(runner, log, opts, find));
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
