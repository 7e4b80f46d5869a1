import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RunFn } from '../../../adapters/config-applier/index.js';
import type { HostStep, WiringContext } from './types.js';

/** A template from the release's deploy/ directory, as shipped. */
export const template = (ctx: WiringContext, rel: string): string => readFileSync(join(ctx.paths.deployDir, rel), 'utf8');

/** A file's current text, or null when it does not exist. */
export const current = (path: string): string | null => (existsSync(path) ? readFileSync(path, 'utf8') : null);

export type Database =
  | { dialect: 'sqlite'; path: string }
  | { dialect: 'pgsql' | 'mysql'; host: string; port: number; name: string };

/** Which lookup tables Postfix and Dovecot need, from MAILSVC_DATABASE_URL. */
export function database(url: string): Database {
  if (url.startsWith('sqlite://')) return { dialect: 'sqlite', path: url.slice('sqlite://'.length) };
  const u = new URL(url);
  const pg = u.protocol.startsWith('postgres');
  return { dialect: pg ? 'pgsql' : 'mysql', host: u.hostname || '127.0.0.1', port: Number(u.port) || (pg ? 5432 : 3306), name: decodeURIComponent(u.pathname.replace(/^\//, '')) || 'mailsvc' };
}

/**
 * The owner to give a file, when this runs as root and the group exists
 * (root:<group>); otherwise none (the applier keeps the old owner, or the caller's).
 */
export async function rootGroupOwner(exec: RunFn, group: string): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const r = await exec('getent', ['group', group], { timeoutMs: 10_000 });
  const gid = Number(r.stdout.split(':')[2]);
  return r.code === 0 && Number.isInteger(gid) ? { uid: 0, gid } : undefined;
}

/** Debian's snakeoil pair (package ssl-cert): what Postfix and nginx use until `mailsvc certs issue` deploys a real one. */
export const SNAKEOIL = { cert: '/etc/ssl/certs/ssl-cert-snakeoil.pem', key: '/etc/ssl/private/ssl-cert-snakeoil.key' };

/**
 * A certificate to start with: Debian's snakeoil pair (made with
 * `make-ssl-cert generate-default-snakeoil` when missing), else, without
 * make-ssl-cert, a self-signed pair in `<tlsDir>/self-signed.{pem,key}`.
 */
export function startCertificate(ctx: WiringContext): { cert: string; key: string; step: HostStep } {
  const own = { cert: join(ctx.paths.tlsDir, 'self-signed.pem'), key: join(ctx.paths.tlsDir, 'self-signed.key') };
  const snakeoil = existsSync(ctx.paths.snakeoil.cert) || (existsSync('/usr/sbin/make-ssl-cert') && !existsSync(own.cert));
  const pair = snakeoil ? ctx.paths.snakeoil : own;
  return { ...pair, step: { what: `a certificate to start with (${pair.cert}), until mailsvc certs issue deploys one`, run: (host) => host.ensureCertificate(pair.cert, pair.key, snakeoil) } };
}
