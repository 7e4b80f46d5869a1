import type { Socket } from 'node:net';

export type RecordServerOptions = {
  /**
   * How records are framed: a text that ends each (`\n` for the hook, `\n\n`
   * for the Postfix policy), or netstrings (`<length>:<bytes>,`, the
   * socketmap protocol Postfix's lookup tables speak).
   */
  separator: string | { netstring: true };
  /** A record longer than this closes the connection. */
  maxRecordBytes: number;
  /** The first record, and every record from its first byte, must be complete within this. */
  recordMs: number;
  /** A connection with nothing to do for this long is closed. */
  idleMs: number;
  /** Records read but not yet answered; at the cap, reading stops. */
  maxInFlight?: number;
  /** Answers the peer has not read yet (bytes); over it, reading stops. */
  maxUnreadAnswerBytes?: number;
};

/**
 * What a handler answers: a text; a text and work to start once it is written
 * (or, should the connection be gone by then, once it cannot be); or `null`
 * to close the connection without an answer.
 */
export type RecordAnswer = string | { text: string; afterWrite: () => void } | null;
export type RecordHandler = (record: string) => Promise<RecordAnswer>;

const DEFAULT_IN_FLIGHT = 4;

/** The first complete record in a buffer and where the next begins; null while it is incomplete; `invalid` for bytes that cannot be one. */
type Framer = (buffer: Buffer) => { record: string; next: number } | null | 'invalid';

function separated(separator: string): Framer {
  const sep = Buffer.from(separator, 'utf8');
  return (buffer) => {
    const end = buffer.indexOf(sep);
    return end < 0 ? null : { record: buffer.subarray(0, end).toString('utf8'), next: end + sep.length };
  };
}

const COLON = 0x3a;
const COMMA = 0x2c;

/** Netstrings (`12:hello world!,`): a length in decimal digits (no leading zero but for 0), a colon, the bytes, a comma. */
export function netstringFramer(maxRecordBytes: number): Framer {
  const maxDigits = String(maxRecordBytes).length;
  return (buffer) => {
    const colon = buffer.indexOf(COLON);
    const digits = buffer.subarray(0, colon < 0 ? Math.min(buffer.length, maxDigits + 1) : colon).toString('latin1');
    if (!/^(0|[1-9]\d*)?$/.test(digits) || digits.length > maxDigits) return 'invalid';
    if (colon < 0) return null;
    if (digits === '') return 'invalid';
    const length = Number(digits);
    if (length > maxRecordBytes) return 'invalid';
    const end = colon + 1 + length;
    if (buffer.length <= end) return null;
    if (buffer[end] !== COMMA) return 'invalid';
    return { record: buffer.subarray(colon + 1, end).toString('utf8'), next: end + 1 };
  };
}

/**
 * Connections waiting to read their next records, served a few per turn of the
 * event loop, first come first served: however many connections stream
 * records, each turn does a bounded amount of their work and the API's
 * requests get their share of every turn.
 */
const waiting: (() => void)[] = [];
const PUMPS_PER_TURN = 4;
let turnScheduled = false;

function runTurn(): void {
  turnScheduled = false;
  for (const pump of waiting.splice(0, PUMPS_PER_TURN)) pump();
  if (waiting.length > 0 && !turnScheduled) {
    turnScheduled = true;
    setImmediate(runTurn);
  }
}

function nextTurn(pump: () => void): void {
  if (!waiting.includes(pump)) waiting.push(pump);
  if (!turnScheduled) {
    turnScheduled = true;
    setImmediate(runTurn);
  }
}
const DEFAULT_UNREAD_ANSWERS = 64 * 1024;

/**
 * Serves a record-per-request text protocol on one connection: records end
 * with `separator`, each gets one answer, answers go out in request order.
 *
 * The peer is a local daemon, but any local process can connect, so one
 * connection holds at most a few records and a few KiB at a time: while
 * `maxInFlight` records wait for answers, or the peer leaves more than
 * `maxUnreadAnswerBytes` of answers unread, the socket is paused and the
 * kernel's buffers push back on the writer. A peer that stays blocked like
 * that for `recordMs`, sends an over-long record, or trickles a record slower
 * than `recordMs` is disconnected; nothing it does reaches the process.
 * A failing handler answers `onError`'s text and the connection goes on.
 */
export function serveRecords(socket: Socket, opts: RecordServerOptions, handle: RecordHandler, onError: (err: unknown) => string): RecordConnection {
  const netstrings = typeof opts.separator !== 'string';
  const frame = typeof opts.separator === 'string' ? separated(opts.separator) : netstringFramer(opts.maxRecordBytes);
  // A partial netstring's length prefix and comma come on top of its bytes.
  const maxPartial = opts.maxRecordBytes + (netstrings ? String(opts.maxRecordBytes).length + 1 : 0);
  const hasRecord = (): boolean => {
    const found = frame(buffer);
    return found !== null && found !== 'invalid';
  };
  const maxInFlight = opts.maxInFlight ?? DEFAULT_IN_FLIGHT;
  const maxUnread = opts.maxUnreadAnswerBytes ?? DEFAULT_UNREAD_ANSWERS;
  let buffer: Buffer = Buffer.alloc(0);
  let inFlight = 0;
  let served = 0;
  let ending = false;
  let closing = false;
  let chain = Promise.resolve();
  let recordTimer: NodeJS.Timeout | undefined;
  let stallTimer: NodeJS.Timeout | undefined;

  const stopTimers = (): void => {
    clearTimeout(recordTimer);
    clearTimeout(stallTimer);
    recordTimer = stallTimer = undefined;
  };
  const drop = (): void => {
    stopTimers();
    buffer = Buffer.alloc(0);
    socket.destroy();
  };

  const answer = async (record: string): Promise<void> => {
    if (socket.destroyed || ending) {
      inFlight--;
      return;
    }
    let out: RecordAnswer;
    try {
      out = await handle(record);
    } catch (err) {
      out = onError(err);
    }
    inFlight--;
    served++;
    const text = out !== null && typeof out === 'object' ? out.text : out;
    const afterWrite = out !== null && typeof out === 'object' ? out.afterWrite : undefined;
    if (socket.destroyed || ending) {
      afterWrite?.();
      return;
    }
    if (text === null) {
      // Close after the answers already written; read nothing more.
      ending = true;
      stopTimers();
      buffer = Buffer.alloc(0);
      socket.pause();
      socket.end();
      return;
    }
    socket.write(text);
    afterWrite?.();
    if (endIfIdle()) return;
    // Yield to the event loop between records, so that records answered
    // without any I/O cannot keep the API and other connections waiting.
    nextTurn(pump);
  };

  /** When the server is closing: ends the connection once no record is being answered or waits complete in the buffer. */
  const endIfIdle = (): boolean => {
    if (!closing || ending || socket.destroyed || inFlight > 0 || hasRecord()) return false;
    ending = true;
    stopTimers();
    buffer = Buffer.alloc(0);
    socket.pause();
    socket.end();
    return true;
  };

  const pump = (): void => {
    if (socket.destroyed || ending) return;
    while (inFlight < maxInFlight && socket.writableLength <= maxUnread) {
      const found = frame(buffer);
      if (found === 'invalid') return drop();
      if (found === null) break;
      buffer = buffer.subarray(found.next);
      inFlight++;
      chain = chain.then(() => answer(found.record));
    }
    const found = frame(buffer);
    if (found === 'invalid') return drop();
    const complete = found !== null;
    if (!complete && buffer.length > maxPartial) return drop();
    // A partial record, or no record yet on a new connection: it must be complete within recordMs.
    const waiting = !complete && (buffer.length > 0 || (served === 0 && inFlight === 0));
    if (waiting && recordTimer === undefined) recordTimer = setTimeout(drop, opts.recordMs);
    if (!waiting && recordTimer !== undefined) {
      clearTimeout(recordTimer);
      recordTimer = undefined;
    }
    const unread = socket.writableLength > maxUnread;
    if (unread && stallTimer === undefined) {
      stallTimer = setTimeout(drop, opts.recordMs);
      socket.once('drain', () => {
        clearTimeout(stallTimer);
        stallTimer = undefined;
        pump();
      });
    }
    if (complete || inFlight >= maxInFlight || unread) socket.pause();
    else socket.resume();
  };

  socket.setTimeout(opts.idleMs, drop);
  socket.on('error', () => undefined);
  socket.on('close', stopTimers);
  socket.on('data', (chunk: Buffer) => {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    pump();
  });
  pump();
  return {
    closeWhenIdle: () => {
      closing = true;
      endIfIdle();
    },
  };
}

/** One connection served by `serveRecords`. */
export type RecordConnection = {
  /**
   * For a server that is shutting down: answers the records already
   * received in full, then ends the connection (at once when it has none).
   * Peers that keep their connections between requests (Dovecot's
   * auth-workers, Postfix's smtpd) would otherwise hold `server.close()`
   * until their idle timeout.
   */
  closeWhenIdle(): void;
};

/**
 * The connections of a server that serves records: `add` each as it is
 * served, `closeAll` when the server closes (after `server.close()`, so no
 * new one comes).
 */
export function recordConnections(): { add(socket: Socket, conn: RecordConnection): void; closeAll(): void } {
  const open = new Map<Socket, RecordConnection>();
  return {
    add: (socket, conn) => {
      open.set(socket, conn);
      socket.once('close', () => open.delete(socket));
    },
    closeAll: () => {
      for (const conn of open.values()) conn.closeWhenIdle();
    },
  };
}
