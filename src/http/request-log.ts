import { LogController } from 'fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Fastify's request log, one compact line per request instead of its two,
 * written once the answer has gone out: at `info` for a request that changes
 * state or fails (status 400 and up), at `debug` for a successful read, which
 * would otherwise be most of the log and of its cost. The line has the
 * method, the path without its query, the status, the time in ms, the client
 * address and the request id; never a header or a body. Fastify's other
 * lines (route not found, errors) are kept.
 */
export class RequestLog extends LogController {
  constructor(private readonly log: Logger) {
    super();
  }

  override incomingRequest(): void {
    // The line is written when the answer has gone out.
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const status = reply.statusCode;
    const failed = error !== null && error !== undefined;
    const level = failed ? 'error' : status >= 400 || !READS.has(request.method) ? 'info' : 'debug';
    if (!this.log.isLevelEnabled(level)) return;
    const url = request.url;
    const q = url.indexOf('?');
    const line = { reqId: request.id, method: request.method, path: q < 0 ? url : url.slice(0, q), status, ms: Math.round(reply.elapsedTime * 10) / 10, ip: request.clientIp };
    if (failed) this.log.error({ ...line, err: error }, 'request errored');
    else this.log[level](line, 'request');
  }
}
