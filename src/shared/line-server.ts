import type { Socket } from 'node:net';

/**
 * Serves a record-per-request text protocol on one connection: records end
 * with `separator`, each gets one answer, answers go out in request order.
 * A record longer than `maxBytes` ends the connection; a failing handler
 * answers `onError`'s text and the connection goes on.
 */
export function serveRecords(
  socket: Socket,
  opts: { separator: string; maxBytes: number; idleMs: number },
  handle: (record: string) => Promise<string>,
  onError: (err: unknown) => string,
): void {
  let buffer = '';
  let chain = Promise.resolve();
  socket.setEncoding('utf8');
  socket.setTimeout(opts.idleMs, () => socket.destroy());
  socket.on('error', () => undefined);
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf(opts.separator)) >= 0) {
      const record = buffer.slice(0, end);
      buffer = buffer.slice(end + opts.separator.length);
      chain = chain.then(async () => {
        let answer: string;
        try {
          answer = await handle(record);
        } catch (err) {
          answer = onError(err);
        }
        if (!socket.destroyed) socket.write(answer);
      });
    }
    if (buffer.length > opts.maxBytes) socket.destroy();
  });
}
