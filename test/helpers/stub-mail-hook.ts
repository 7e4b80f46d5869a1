import { chmodSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { createInterface } from 'node:readline';

/**
 * Doubles for the two services mailsvc runs for the mail daemons, so the
 * daemon configuration can be tested before (and apart from) the real ones:
 * the authentication hook Dovecot's Lua passdb asks, and the Postfix policy
 * service that enforces send limits.
 */

const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');
const unhex = (h: string) => Buffer.from(h, 'hex').toString('utf8');

export type HookRequest = { protocol: string; remoteIp: string; user: string; password: string };
/** How the stub answers: by its password table, `ERROR` to everything, or never. */
export type HookMode = 'answer' | 'error' | 'silent';

export type StubMailHook = {
  socketPath: string;
  requests: HookRequest[];
  setMode(mode: HookMode): void;
  stop(): Promise<void>;
};

function closeServer(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const s of sockets) s.destroy();
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * The hook protocol: `AUTH\t<protocol>\t<ip>\t<hex user>\t<hex password>` per
 * line, answered `OK\t<hex canonical user>`, `FAIL` or `ERROR\t<reason>`.
 * `accept` maps a lowercase address to the passwords that log it in;
 * `logins` maps other login names to their canonical address. It speaks the
 * protocol from before the userdb fields on purpose: deploy's Lua script asks
 * with `\tuserdb`, gets `ERROR\tmalformed request` and asks again without it,
 * so the tests using this stub also prove an upgraded script works with an
 * older mailsvc (the SQL userdb then answers).
 */
export async function startStubMailHook(
  socketPath: string,
  accept: Record<string, string[]>,
  logins: Record<string, string> = {},
): Promise<StubMailHook> {
  const requests: HookRequest[] = [];
  const sockets = new Set<Socket>();
  let mode: HookMode = 'answer';
  const answer = (line: string): string => {
    const parts = line.split('\t');
    if (parts.length !== 5 || parts[0] !== 'AUTH') return 'ERROR\tmalformed request';
    const [, protocol = '', remoteIp = '', userHex = '', passwordHex = ''] = parts;
    const user = unhex(userHex).toLowerCase();
    const password = unhex(passwordHex);
    requests.push({ protocol, remoteIp, user, password });
    if (mode === 'error') return 'ERROR\tdatabase unavailable';
    const canonical = logins[user] ?? user;
    return accept[canonical]?.includes(password) ? `OK\t${hex(canonical)}` : 'FAIL';
  };
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    createInterface({ input: socket }).on('line', (line) => {
      const reply = answer(line);
      if (mode !== 'silent') socket.write(`${reply}\n`);
    });
  });
  rmSync(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  // Dovecot's auth workers run as the dovecot user: they need write access.
  chmodSync(socketPath, 0o666);
  return {
    socketPath,
    requests,
    setMode: (m) => (mode = m),
    stop: () => closeServer(server, sockets),
  };
}

export type PolicyRequest = Record<string, string>;
export type StubPolicyService = {
  /** For Postfix: `inet:127.0.0.1:<port>`. */
  address: string;
  requests: PolicyRequest[];
  stop(): Promise<void>;
};

/**
 * A Postfix policy service (attribute lines, an empty line ends a request;
 * one connection carries many) that lets `allowPerUser` messages through per
 * sasl_username, then answers a soft reject, as mailsvc's send limits do.
 */
export async function startStubPolicyService(allowPerUser: number): Promise<StubPolicyService> {
  const requests: PolicyRequest[] = [];
  const sent = new Map<string, number>();
  const sockets = new Set<Socket>();
  const decide = (req: PolicyRequest): string => {
    const user = req.sasl_username ?? '';
    if (user === '' || req.protocol_state !== 'END-OF-MESSAGE') return 'DUNNO';
    const count = sent.get(user) ?? 0;
    if (count >= allowPerUser) return 'DEFER_IF_PERMIT Rate limit exceeded';
    sent.set(user, count + 1);
    return 'DUNNO';
  };
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let current: PolicyRequest = {};
    createInterface({ input: socket }).on('line', (line) => {
      if (line !== '') {
        const eq = line.indexOf('=');
        if (eq > 0) current[line.slice(0, eq)] = line.slice(eq + 1);
        return;
      }
      requests.push(current);
      socket.write(`action=${decide(current)}\n\n`);
      current = {};
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { address: `inet:127.0.0.1:${port}`, requests, stop: () => closeServer(server, sockets) };
}
