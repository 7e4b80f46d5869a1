import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { LogThrottle } from '../shared/log-throttle.js';

/**
 * One spelling per address, as fail2ban and the lockout must see it: strict
 * dotted-quad IPv4 (no decimal, hex, octal or short forms), IPv6 in its
 * RFC 5952 form, IPv4-mapped IPv6 as the IPv4 it carries, the zone id of a
 * scoped address dropped. Anything else is not an address: null.
 */
export function canonicalIp(raw: string): string | null {
  const text = raw.trim();
  const kind = isIP(text);
  if (kind === 4) return text;
  if (kind !== 6) return null;
  const zone = text.indexOf('%');
  const bare = zone >= 0 ? text.slice(0, zone) : text;
  let host: string;
  try {
    // The URL parser writes the RFC 5952 form and reads `::1.2.3.4` right
    // (IPv4-compatible), where ipaddr.js would read it as IPv4-mapped.
    host = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const addr = ipaddr.IPv6.parse(host);
  return addr.isIPv4MappedAddress() ? addr.toIPv4Address().toString() : host;
}

/**
 * `request.clientIp`: the address the lockout counts and the auth log names.
 * Behind a trusted proxy it comes from X-Forwarded-For (Fastify's `request.ip`);
 * a value there that is not an address falls back to the socket's address,
 * with one warning a minute (a hostile client can send it on every request).
 */
export function registerClientIp(app: FastifyInstance, trustingProxies: boolean, log: Logger): void {
  const throttle = new LogThrottle(60_000);
  // A connection's peer does not change: its address is worked out once per connection, not per request.
  const bySocket = new WeakMap<object, string>();
  const socketIp = (req: FastifyRequest): string => {
    const socket = req.socket;
    let ip = bySocket.get(socket);
    if (ip === undefined) {
      const raw = socket.remoteAddress ?? '';
      ip = canonicalIp(raw) ?? (raw === '' ? 'unknown' : raw);
      // Before the socket is connected (or after it closed) there is no address to keep.
      if (raw !== '') bySocket.set(socket, ip);
    }
    return ip;
  };
  app.decorateRequest('clientIp', {
    getter(this: FastifyRequest): string {
      if (!trustingProxies) return socketIp(this);
      const forwarded = canonicalIp(this.ip);
      if (forwarded !== null) return forwarded;
      const fallback = socketIp(this);
      const held = throttle.admit('x-forwarded-for');
      if (held !== null) {
        log.warn({ forwarded: this.ip.slice(0, 100), proxy: fallback, suppressed: held }, 'X-Forwarded-For from a trusted proxy holds no valid address: the proxy address is used');
      }
      return fallback;
    },
  });
}
