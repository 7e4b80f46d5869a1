import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

export const PORTAL_COOKIE = '__Host-mailsvc_portal';

/** A signed-in portal user: its cookie and CSRF token on every call, as the portal page sends them. */
export type PortalClient = {
  cookie: string;
  csrf: string;
  call(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown, opts?: { csrf?: string | null; ip?: string }): Promise<LightMyRequestResponse>;
};

export function cookieOf(res: LightMyRequestResponse): string | undefined {
  const raw = res.headers['set-cookie'];
  const line = (Array.isArray(raw) ? raw : [raw ?? '']).find((l) => l.startsWith(`${PORTAL_COOKIE}=`));
  return line?.slice(PORTAL_COOKIE.length + 1).split(';')[0];
}

export function portalClient(app: FastifyInstance, cookie: string, csrf: string): PortalClient {
  return {
    cookie,
    csrf,
    call: (method, path, body, opts = {}) =>
      app.inject({
        method,
        url: `/portal/api/${path}`,
        remoteAddress: opts.ip ?? '127.0.0.1',
        headers: {
          cookie: `${PORTAL_COOKIE}=${cookie}`,
          ...(opts.csrf === null ? {} : { 'x-portal-csrf': opts.csrf ?? csrf }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      }),
  };
}

export function signInRequest(app: FastifyInstance, body: Record<string, unknown>, ip = '127.0.0.1'): Promise<LightMyRequestResponse> {
  return app.inject({ method: 'POST', url: '/portal/api/session', remoteAddress: ip, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
}

export async function portalSignIn(app: FastifyInstance, address: string, password: string, code?: string): Promise<PortalClient> {
  const res = await signInRequest(app, { address, password, ...(code === undefined ? {} : { code }) });
  const cookie = cookieOf(res);
  if (res.statusCode !== 200 || !cookie) throw new Error(`portal sign-in of ${address} failed: ${res.statusCode} ${res.body}`);
  return portalClient(app, cookie, res.json<{ csrf: string }>().csrf);
}
