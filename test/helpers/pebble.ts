import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpsRequest, createServer as createHttpsServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findProgram, freePort } from './mail-daemons.js';
import { makeTestCa } from './test-ca.js';
import type { TestCa } from './test-ca.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Debian's pebble (the ACME test CA) from a configuration in a temp dir, on
 * 127.0.0.1 and free ports: its own HTTPS under a private test CA (the Debian
 * package ships no test certificates), the HTTP-01 port it validates on, and
 * `-dnsserver` pointed at the test's DNS server (knot) for names and dns-01.
 */
export type Pebble = {
  directoryUrl: string;
  /** The private CA of pebble's own HTTPS listener (trust it for the ACME client: MAILSVC_ACME_CA_FILE). */
  tls: TestCa;
  caFile: string;
  /** The port pebble fetches http-01 answers from. */
  httpPort: number;
  managementUrl: string;
  /** The root that signs what pebble issues (PEM, from /roots/0). */
  root(): Promise<string>;
  stop(): Promise<void>;
};

export function pebbleUnavailable(): string | null {
  return findProgram('pebble') === null ? 'missing /usr/bin/pebble (Debian package pebble)' : null;
}

/** GET with the test CA trusted; the body as text. */
export function httpsGet(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ca, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject).on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

export async function startPebble(opts: { dnsServer: string; httpPort?: number }): Promise<Pebble> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-pebble-'));
  const tls = makeTestCa(['localhost', '127.0.0.1']);
  writeFileSync(join(dir, 'cert.pem'), tls.cert);
  writeFileSync(join(dir, 'key.pem'), tls.key);
  writeFileSync(join(dir, 'ca.pem'), tls.ca);
  const [port, mgmt] = [await freePort(), await freePort()];
  const httpPort = opts.httpPort ?? (await freePort());
  writeFileSync(
    join(dir, 'pebble.json'),
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${port}`,
        managementListenAddress: `127.0.0.1:${mgmt}`,
        certificate: join(dir, 'cert.pem'),
        privateKey: join(dir, 'key.pem'),
        httpPort,
        tlsPort: await freePort(),
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );
  const child: ChildProcess = spawn(findProgram('pebble') ?? 'pebble', ['-config', join(dir, 'pebble.json'), '-dnsserver', opts.dnsServer, '-strict'], {
    // PEBBLE_AUTHZREUSE=0 still reuses a valid authorization 1 time in 100 (pebble: rand.Intn(100) > percent): a test that needs a challenge asks with a name or an account that has none.
    env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (log = (log + d).slice(-8000)));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (log = (log + d).slice(-8000)));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
    tls.cleanup();
  };
  const directoryUrl = `https://127.0.0.1:${port}/dir`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null || i > 200) {
      await stop();
      throw new Error(`pebble did not start: ${log}`);
    }
    if ((await httpsGet(directoryUrl, tls.ca).catch(() => ({ status: 0 }))).status === 200) break;
    await sleep(100);
  }
  const managementUrl = `https://127.0.0.1:${mgmt}`;
  return {
    directoryUrl,
    tls,
    caFile: join(dir, 'ca.pem'),
    httpPort,
    managementUrl,
    root: async () => (await httpsGet(`${managementUrl}/roots/0`, tls.ca)).body,
    stop,
  };
}

/**
 * A local HTTPS server in front of pebble speaking ACME: it passes every
 * request through (the URLs in bodies and Location/Link headers rewritten to
 * itself) and adds what pebble 2.4 lacks or cannot be told to do: ACME
 * Renewal Information (RFC 9773: `renewalInfo` in the directory, GET
 * renewalInfo/<certID> answering the window the test sets) and, on demand,
 * one 429 `rateLimited` answer with a Retry-After.
 */
export type AcmeProxy = {
  directoryUrl: string;
  /** The window GET renewalInfo answers (null: no ARI in the directory). */
  ari: { start: Date; end: Date; retryAfter?: number } | null;
  /** The cert IDs asked for, and the `replaces` of each new order. */
  ariAsked: string[];
  replaces: string[];
  /** Answer the next request whose path ends with this (pebble's newOrder is `order-plz`) with 429 and this Retry-After. */
  rateLimitNext: { pathEndsWith: string; retryAfter: number } | null;
  rateLimited: number;
  close(): Promise<void>;
};

export async function startAcmeProxy(pebble: Pebble): Promise<AcmeProxy> {
  const port = await freePort();
  const self = `https://127.0.0.1:${port}`;
  const upstream = new URL(pebble.directoryUrl).origin;
  const state: Omit<AcmeProxy, 'close' | 'directoryUrl'> = { ari: null, ariAsked: [], replaces: [], rateLimitNext: null, rateLimited: 0 };
  const rewrite = (s: string) => s.split(upstream).join(self);
  const server = createHttpsServer({ cert: pebble.tls.cert, key: pebble.tls.key }, (req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      let body = '';
      for await (const c of req) body += String(c);
      const path = req.url ?? '/';
      if (state.rateLimitNext && path.endsWith(state.rateLimitNext.pathEndsWith)) {
        const { retryAfter } = state.rateLimitNext;
        state.rateLimitNext = null;
        state.rateLimited += 1;
        res.writeHead(429, { 'content-type': 'application/problem+json', 'retry-after': String(retryAfter) });
        res.end(JSON.stringify({ type: 'urn:ietf:params:acme:error:rateLimited', detail: 'too many new orders recently', status: 429 }));
        return;
      }
      if (path.startsWith('/renewal-info/')) {
        state.ariAsked.push(path.slice('/renewal-info/'.length));
        if (!state.ari) return void res.writeHead(404).end();
        res.writeHead(200, { 'content-type': 'application/json', 'retry-after': String(state.ari.retryAfter ?? 21600) });
        res.end(JSON.stringify({ suggestedWindow: { start: state.ari.start.toISOString(), end: state.ari.end.toISOString() } }));
        return;
      }
      if (req.method === 'POST' && /order-plz|new-order/.test(path)) {
        try {
          const payload = JSON.parse(Buffer.from((JSON.parse(body) as { payload: string }).payload, 'base64url').toString()) as { replaces?: string };
          if (payload.replaces) state.replaces.push(payload.replaces);
        } catch {
          // not ours to judge
        }
      }
      const up = httpsRequest(`${upstream}${path}`, { method: req.method, headers: req.headers, ca: pebble.tls.ca }, (r) => {
        let text = '';
        r.setEncoding('utf8').on('data', (d: string) => (text += d)).on('end', () => {
          const headers: Record<string, string | string[]> = {};
          for (const [k, v] of Object.entries(r.headers)) if (v !== undefined && k !== 'content-length' && k !== 'transfer-encoding') headers[k] = Array.isArray(v) ? v.map(rewrite) : rewrite(v);
          let out = rewrite(text);
          if (path === '/dir' && state.ari) {
            const dir = JSON.parse(out) as Record<string, unknown>;
            dir.renewalInfo = `${self}/renewal-info`;
            out = JSON.stringify(dir);
          }
          res.writeHead(r.statusCode ?? 502, headers);
          res.end(out);
        });
      });
      up.on('error', (e) => res.writeHead(502).end(String(e)));
      // The Host header goes through unchanged: pebble builds its URLs from it and checks each JWS's url against it.
      up.end(body || undefined);
    })();
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  const proxy = Object.assign(state, {
    directoryUrl: `${self}/dir`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  });
  return proxy as AcmeProxy;
}
