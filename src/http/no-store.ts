import type { FastifyInstance } from 'fastify';

/**
 * `Cache-Control: no-store` on every answer of the API: tokens, the TOTP
 * secret, recovery codes, app passwords and API keys are in some of them, and
 * the rest is an administrator's private data. One hook, so a route added
 * later cannot forget it. Only the API docs page and the web panel's static files (which
 * set their own Cache-Control) may be cached.
 */
export function registerNoStore(app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every answer, and no promise is needed.
  app.addHook('onSend', (req, reply, payload, done) => {
    // The panel's static files set their own (hashed assets cached for good).
    if (!req.url.startsWith('/docs') && !reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    done(null, payload);
  });
}
