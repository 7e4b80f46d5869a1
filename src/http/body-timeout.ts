import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';

const hasBody = (headers: Record<string, string | string[] | undefined>): boolean =>
  headers['transfer-encoding'] !== undefined || Number(headers['content-length'] ?? 0) > 0;

/**
 * A request body must arrive within `seconds`, or the request is answered
 * 408 `{"detail"}` and the connection closed (Fastify closes it after any
 * body error): a client trickling its body cannot hold a connection and a
 * request open indefinitely. The body runs through a pass-through stream
 * whose timer ends it with the error the parser then answers.
 */
export function registerBodyTimeout(app: FastifyInstance, seconds: number): void {
  app.addHook('preParsing', (request, reply, payload, done) => {
    if (request.method === 'GET' || request.method === 'HEAD' || !hasBody(request.headers)) {
      done(null, payload);
      return;
    }
    const timed = new PassThrough();
    // The parser listens for errors once it reads; until then nothing may go unheard.
    timed.on('error', () => undefined);
    const timer = setTimeout(() => {
      payload.unpipe(timed);
      timed.destroy(Object.assign(new Error(`Request body not received within ${seconds} s`), { statusCode: 408, code: 'MAILSVC_BODY_TIMEOUT' }));
    }, seconds * 1000);
    const stop = (): void => clearTimeout(timer);
    timed.once('end', stop);
    timed.once('close', stop);
    reply.raw.once('close', stop);
    payload.once('error', (err) => timed.destroy(err));
    payload.pipe(timed);
    done(null, timed);
  });
}
