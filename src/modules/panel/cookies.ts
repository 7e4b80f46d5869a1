import type { FastifyReply, FastifyRequest } from 'fastify';

export const SESSION_COOKIE = '__Host-mailsvc_panel';
/** The development cookie: no __Host- prefix and no Secure, since it travels over plain HTTP. */
export const DEV_SESSION_COOKIE = 'mailsvc_panel_dev';

/** One cookie's value from the Cookie header (the panel sets only its own). */
export function readCookie(req: FastifyRequest, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * The session cookie: host-only (`__Host-`: Secure, Path=/, no Domain),
 * HttpOnly (no script reads it), SameSite=Strict (no other site's page sends
 * it). No Max-Age: it lives with the browser session at most, and the server
 * ends it earlier (idle and absolute lifetime).
 */
export function setSessionCookie(reply: FastifyReply, dev: boolean, value: string): void {
  const name = dev ? DEV_SESSION_COOKIE : SESSION_COOKIE;
  reply.header('set-cookie', `${name}=${value}; Path=/; HttpOnly; SameSite=Strict${dev ? '' : '; Secure'}`);
}

export function clearSessionCookie(reply: FastifyReply, dev: boolean): void {
  const name = dev ? DEV_SESSION_COOKIE : SESSION_COOKIE;
  reply.header('set-cookie', `${name}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${dev ? '' : '; Secure'}`);
}
