import { createConnection } from 'node:net';
import type { Logger } from 'pino';
import type { HelperSettings } from '../config/helper-settings.js';
import { HelperError, unreachable } from '../adapters/helper-client.js';
import type { HelperClient, HelperResult } from '../adapters/helper-client.js';
import { MAX_ANSWER_BYTES, formatLine, parseAnswer } from './protocol.js';
import { DirectHelperClient, HelperRunner, resultOf } from './runner.js';

const NL = 0x0a;

/**
 * Connections one client holds at once: the helper admits at most 4 per
 * process (docs/helper.md, Limits; `perPid` in server.ts) and refuses the rest
 * as `busy`, so calls made together (a ban checks every jail at once) wait here
 * for a free connection instead.
 */
export const MAX_CONCURRENT_CALLS = 4;

/** After an answer, how long the helper gets to close its end of the connection before this client cuts it. */
const CLOSE_WAIT_MS = 2000;

/**
 * Asks the helper over its Unix socket: one connection per call, one request
 * line, one answer line, at most MAX_CONCURRENT_CALLS connections at once. A
 * helper that does not answer is `unreachable`.
 */
export class SocketHelperClient implements HelperClient {
  private nextId = 1;
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly path: string,
    private readonly timeoutMs = 60_000,
    private readonly maxConcurrent = MAX_CONCURRENT_CALLS,
  ) {}

  async run(action: string, args: readonly string[]): Promise<HelperResult> {
    if (this.active >= this.maxConcurrent) await new Promise<void>((r) => this.waiting.push(r));
    this.active++;
    const { result, closed } = this.call(action, args);
    // The slot is free once the helper has closed its end too: it counts the connection until then,
    // and it identifies the next one at once, so freeing it at the answer would go over its limit.
    void closed.then(() => {
      this.active--;
      this.waiting.shift()?.();
    });
    return result;
  }

  private call(action: string, args: readonly string[]): { result: Promise<HelperResult>; closed: Promise<void> } {
    const id = this.nextId++;
    const socket = createConnection(this.path);
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const result = new Promise<HelperResult>((resolve, reject) => {
      const parts: Buffer[] = [];
      let size = 0;
      let connected = false;
      let done = false;
      const finish = (fn: () => void, gracefully = false): void => {
        if (done) return;
        done = true;
        if (gracefully) {
          // Our end closed; the helper closes its own when it reads that. One that does not is cut off.
          socket.end();
          socket.setTimeout(CLOSE_WAIT_MS, () => socket.destroy());
        } else {
          socket.destroy();
        }
        fn();
      };
      socket.setTimeout(this.timeoutMs, () =>
        finish(() => reject(connected ? new HelperError('failed', `mailsvc-helper gave no answer within ${this.timeoutMs} ms`) : unreachable(this.path, 'timeout'))),
      );
      socket.once('connect', () => {
        connected = true;
        socket.write(formatLine({ id, action, args: [...args] }));
      });
      socket.on('error', (err: NodeJS.ErrnoException) =>
        finish(() => reject(connected ? new HelperError('failed', `mailsvc-helper connection failed: ${err.code ?? err.message}`) : unreachable(this.path, err.code ?? err.message))),
      );
      socket.on('data', (chunk: Buffer) => {
        const nl = chunk.indexOf(NL);
        parts.push(nl >= 0 ? chunk.subarray(0, nl) : chunk);
        size += chunk.length;
        if (nl < 0) {
          if (size > MAX_ANSWER_BYTES) finish(() => reject(new HelperError('failed', 'mailsvc-helper sent an answer over the size limit')));
          return;
        }
        const answer = parseAnswer(Buffer.concat(parts).toString('utf8'));
        const settle = (): void => {
          // A connection over the helper's limits is answered once with id null ("busy") and closed.
          if (answer === null || (answer.id !== id && !(answer.id === null && !answer.ok))) {
            reject(new HelperError('failed', 'mailsvc-helper sent an answer this client cannot read'));
            return;
          }
          try {
            resolve(resultOf(answer));
          } catch (err) {
            reject(err instanceof Error ? err : new Error(String(err)));
          }
        };
        finish(settle, true);
      });
      socket.once('end', () =>
        finish(() => reject(new HelperError('failed', 'mailsvc-helper closed the connection without an answer (too many connections?)'))),
      );
    });
    return { result, closed };
  }
}

/** The client MAILSVC_HELPER asks for: the socket, or `direct` (this process is root and runs actions itself). */
export function createHelperClient(settings: HelperSettings, log: Logger): HelperClient {
  return settings.endpoint.mode === 'direct'
    ? new DirectHelperClient(new HelperRunner(settings, log))
    : new SocketHelperClient(settings.endpoint.path);
}
