import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** What Node's HTTP parser refuses before Fastify sees a request, with the API's `{"detail"}` body. */
const CLIENT_ERRORS: Record<string, [number, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request timed out: the request was not received in time'],
  HPE_HEADER_OVERFLOW: [431, 'Request header fields too large: the URL and headers together must stay under 16 KiB'],
  HPE_INVALID_METHOD: [400, 'Bad request: unknown HTTP method'],
};

/**
 * Fastify's `clientErrorHandler`: the answer to a request Node could not parse
 * (unknown method, URL or headers too large, a request that never finished).
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, detail] = CLIENT_ERRORS[err.code ?? ''] ?? [400, 'Bad request: the request could not be parsed'];
  const body = JSON.stringify({ detail });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/** A route's URL pattern as a matcher: `:param` matches one path segment. */
function matcher(url: string): RegExp {
  const escaped = url.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  return new RegExp(`^${escaped.join('/')}/?$`);
}

/**
 * Unknown paths are 404; a known path called with a method it does not serve
 * is 405 with `Allow` listing the methods it does. Must be registered before
 * the routes, so it sees each of them.
 */
export function registerNotFound(app: FastifyInstance): void {
  const routes: { match: RegExp; methods: Set<string> }[] = [];
  const byUrl = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    let methods = byUrl.get(route.url);
    if (!methods) {
      methods = new Set();
      byUrl.set(route.url, methods);
      routes.push({ match: matcher(route.url), methods });
    }
    for (const m of Array.isArray(route.method) ? route.method : [route.method]) methods.add(m);
  });
  app.setNotFoundHandler((req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0] ?? '/';
    const allowed = new Set<string>();
    for (const r of routes) if (r.match.test(path)) for (const m of r.methods) allowed.add(m);
    if (allowed.size > 0) {
      const allow = [...allowed].sort().join(', ');
      return reply.status(405).header('allow', allow).send({ detail: `Method not allowed: ${req.method} ${path}; allowed: ${allow}` });
    }
    return reply.status(404).send({ detail: `Not found: ${req.method} ${path}` });
  });
}
