import { createServer } from 'node:https';
import type { Server } from 'node:https';

/**
 * The mail host's HTTPS front as nginx would serve it: the MTA-STS policy at
 * https://mta-sts.<domain>/.well-known/mta-sts.txt and mailsvc's /health at
 * https://<mail host>/health, on 127.0.0.1 and a port picked at run time, with
 * a certificate from the test's CA. `policy` and `health` may change mid-test.
 */
export type MtaStsServer = { port: number; state: { policy: string; policyType: string; health: number }; close(): Promise<void> };

export async function startMtaStsServer(tls: { cert: string; key: string }, domain: string, mailHost: string, policy: string): Promise<MtaStsServer> {
  const state = { policy, policyType: 'text/plain', health: 200 };
  const server: Server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    if (host === `mta-sts.${domain}` && req.url === '/.well-known/mta-sts.txt') {
      res.writeHead(200, { 'content-type': state.policyType });
      res.end(state.policy);
    } else if (host === mailHost && req.url === '/health') {
      res.writeHead(state.health, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: state.health === 200 ? 'ok' : 'degraded' }));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { port, state, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
