/**
 * A real local HTTPS server playing an HTTP SMS provider. Its certificate
 * (test/fixtures/tls) covers `localhost`, `127.0.0.1` and `::1` and is signed by
 * the test CA that vitest.config.ts puts into NODE_EXTRA_CA_CERTS.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';

const tlsDir = fileURLToPath(new URL('../fixtures/tls/', import.meta.url));
export const testCaPath = `${tlsDir}ca.pem`;

/**
 * Why the test CA is not trusted by this process, or null when it is. Node reads
 * NODE_EXTRA_CA_CERTS (one file) once at start; vitest.config.ts must make it
 * name a file that holds test/fixtures/tls/ca.pem before the workers fork.
 */
export function testCaTrustProblem(): string | null {
  const file = process.env.NODE_EXTRA_CA_CERTS;
  if (!file) return 'NODE_EXTRA_CA_CERTS is not set';
  let bundle: string;
  try {
    bundle = readFileSync(file, 'utf8');
  } catch {
    return `NODE_EXTRA_CA_CERTS names an unreadable file (${file})`;
  }
  const ca = readFileSync(testCaPath, 'utf8').trim();
  if (!bundle.replace(/\r\n/g, '\n').includes(ca)) {
    return `NODE_EXTRA_CA_CERTS (${file}) does not contain test/fixtures/tls/ca.pem; the HTTPS test servers cannot be verified`;
  }
  return null;
}

export type RecordedRequest = {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body, or the raw text when it is not JSON. */
  body: unknown;
};

/**
 * One TLS handshake with the fake provider (as `localhost`): 'ok' or the error
 * code. `bundledRootsOnly` trusts only Node's bundled roots, leaving out
 * NODE_EXTRA_CA_CERTS, to show that the test CA is what makes it verify.
 */
export function probeTlsHandshake(port: number, bundledRootsOnly = false): Promise<string> {
  return new Promise((resolve) => {
    const socket = tls.connect({
      host: '127.0.0.1',
      port,
      servername: 'localhost',
      ...(bundledRootsOnly ? { ca: [...tls.rootCertificates] } : {}),
    });
    socket.once('secureConnect', () => {
      socket.end();
      resolve('ok');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

type Behaviour =
  | { kind: 'status'; status: number; body: string }
  | { kind: 'delay'; ms: number; status: number }
  | { kind: 'redirect'; location: string; status: number };

export type FakeSmsProvider = {
  port: number;
  /** `https://127.0.0.1:<port>` */
  origin: string;
  /** `127.0.0.1:<port>`, the allow-list entry for `origin`. */
  hostPort: string;
  /** Every HTTP request received, in order. */
  requests: RecordedRequest[];
  /** TCP connections accepted (also those whose TLS handshake failed). */
  connections(): number;
  /** Answer every following request with this status (default 200 `{"ok":true}`). */
  respondWith(status: number, body?: string): void;
  /** Wait `ms` before answering (for timeout tests). */
  delay(ms: number, status?: number): void;
  /** Answer with a redirect (302 by default) to `location`. */
  redirect(location: string, status?: number): void;
  /** Forget recorded requests and go back to answering 200. */
  reset(): void;
  close(): Promise<void>;
};

export async function startFakeSmsProvider(): Promise<FakeSmsProvider> {
  let behaviour: Behaviour = { kind: 'status', status: 200, body: '{"ok":true}' };
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<Socket>();
  let connections = 0;

  const server: Server = createServer(
    {
      key: readFileSync(`${tlsDir}server-key.pem`),
      cert: readFileSync(`${tlsDir}server-cert.pem`),
    },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          /* keep the raw text */
        }
        requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });

        const b = behaviour;
        if (b.kind === 'status') {
          res.writeHead(b.status, { 'content-type': 'application/json' }).end(b.body);
        } else if (b.kind === 'redirect') {
          res.writeHead(b.status, { location: b.location }).end();
        } else {
          const t = setTimeout(() => {
            timers.delete(t);
            if (!res.destroyed) res.writeHead(b.status, { 'content-type': 'application/json' }).end('{"ok":true}');
          }, b.ms);
          timers.add(t);
        }
      });
    },
  );
  server.on('connection', (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // A client that gives up mid-handshake is expected in these tests.
  server.on('tlsClientError', () => undefined);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    origin: `https://127.0.0.1:${port}`,
    hostPort: `127.0.0.1:${port}`,
    requests,
    connections: () => connections,
    respondWith(status, body = '{"ok":true}') {
      behaviour = { kind: 'status', status, body };
    },
    delay(ms, status = 200) {
      behaviour = { kind: 'delay', ms, status };
    },
    redirect(location, status = 302) {
      behaviour = { kind: 'redirect', location, status };
    },
    reset() {
      requests.length = 0;
      connections = 0;
      behaviour = { kind: 'status', status: 200, body: '{"ok":true}' };
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
