import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { StaticFile } from './static-files.js';
import { loadPanelFiles, pickEncoding } from './static-files.js';

/**
 * Only files of this origin: no inline script or style, no remote origin, no
 * framing. `data:` images are the locally rendered TOTP QR code.
 */
export const PANEL_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** GET /panel/ and its files, compressed, with the panel's security headers. */
export function registerStaticPanel(app: FastifyInstance, dir: string): void {
  const files = loadPanelFiles(dir);
  if (!files) app.log.warn({ dir }, 'MAILSVC_ENABLE_WEB_PANEL=yes but the panel is not built: run npm run build');

  const send = (req: FastifyRequest, reply: FastifyReply, path: string) => {
    const file: StaticFile | undefined = files?.get(path);
    if (!files) return reply.code(503).send({ detail: 'The web panel is not built: run npm run build and restart the service' });
    if (!file) return reply.code(404).send({ detail: 'Not found' });
    const enc = pickEncoding(req.headers['accept-encoding']);
    reply
      .header('content-type', file.type)
      .header('content-security-policy', PANEL_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY')
      .header('cross-origin-opener-policy', 'same-origin')
      .header('vary', 'accept-encoding')
      .header('cache-control', file.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
    if (enc) reply.header('content-encoding', enc);
    return reply.send(enc === 'br' ? file.br : enc === 'gzip' ? file.gzip : file.raw);
  };

  app.get('/panel', { schema: { hide: true } }, (_req, reply) => reply.redirect('/panel/', 302));
  app.get('/panel/', { schema: { hide: true } }, (req, reply) => send(req, reply, 'index.html'));
  app.get('/panel/*', { schema: { hide: true } }, (req, reply) => send(req, reply, (req.params as { '*': string })['*']));
}
