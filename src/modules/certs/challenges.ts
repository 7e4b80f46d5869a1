import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Resolver } from 'node:dns/promises';
import type { DnsServer } from '../../config/dns-settings.js';
import { AppError } from '../../shared/errors.js';

/**
 * How one ACME challenge is answered: `present` makes the answer visible
 * (and waits until it is), `cleanup` takes it away. One solver serves every
 * authorization of an order; `close` ends what it opened.
 */
export type ChallengeSolver = {
  type: 'http-01' | 'dns-01';
  present(name: string, token: string, keyAuthorization: string): Promise<void>;
  cleanup(name: string, token: string, keyAuthorization: string): Promise<void>;
  close(): Promise<void>;
};

const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** HTTP-01 by mailsvc's own responder: a plain HTTP server that answers only /.well-known/acme-challenge/<token>, open while the order is. */
export async function httpResponder(address: string, port: number): Promise<ChallengeSolver> {
  const answers = new Map<string, string>();
  const server: Server = createServer((req, res) => {
    const m = /^\/\.well-known\/acme-challenge\/([A-Za-z0-9_-]+)$/.exec((req.url ?? '').split('?')[0] ?? '');
    const answer = m?.[1] ? answers.get(m[1]) : undefined;
    if (req.method !== 'GET' || answer === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(answer);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new AppError(
          'unavailable',
          err.code === 'EADDRINUSE'
            ? `port ${port} is taken (nginx?): set MAILSVC_ACME_WEBROOT to the root the nginx snippet serves /.well-known/acme-challenge/ from`
            : err.code === 'EACCES'
              ? `port ${port} needs CAP_NET_BIND_SERVICE: run the command as root, or set MAILSVC_ACME_WEBROOT (nginx)`
              : `the HTTP-01 responder could not listen on ${address}:${port}: ${err.message}`,
        ),
      ),
    );
    server.listen(port, address, () => resolve());
  });
  return {
    type: 'http-01',
    present: async (_name, token, keyAuth) => {
      if (!TOKEN.test(token)) throw new AppError('upstream', 'the CA sent a challenge token that is not base64url');
      answers.set(token, keyAuth);
    },
    cleanup: async (_name, token) => {
      answers.delete(token);
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** HTTP-01 through a webroot that nginx serves: `<root>/.well-known/acme-challenge/<token>`. */
export function webrootSolver(root: string): ChallengeSolver {
  const dir = join(root, '.well-known', 'acme-challenge');
  return {
    type: 'http-01',
    present: async (_name, token, keyAuth) => {
      if (!TOKEN.test(token)) throw new AppError('upstream', 'the CA sent a challenge token that is not base64url');
      try {
        await mkdir(dir, { recursive: true });
        await writeFile(join(dir, token), keyAuth, { mode: 0o644 });
      } catch (err) {
        throw new AppError('unavailable', `cannot write the HTTP-01 answer into ${dir} (${(err as NodeJS.ErrnoException).code ?? 'error'}): make it writable by the mailsvc user`);
      }
    },
    cleanup: async (_name, token) => {
      if (TOKEN.test(token)) await rm(join(dir, token), { force: true });
    },
    close: async () => undefined,
  };
}

/** The TXT value of a dns-01 challenge: base64url(SHA-256(key authorization)), as acme-client's getChallengeKeyAuthorization gives it for dns-01. */
export const acmeTxtName = (name: string): string => `_acme-challenge.${name.replace(/^\*\./, '')}`;

/** Waits until every server answers `value` among the TXT records of `fqdn` (the CA asks them next). */
export async function waitForTxt(servers: readonly DnsServer[], fqdn: string, value: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = await Promise.all(
      servers.length === 0
        ? [new Resolver({ timeout: 2000, tries: 1 }).resolveTxt(fqdn).then((r) => r.some((t) => t.join('') === value)).catch(() => false)]
        : servers.map((s) => {
            const r = new Resolver({ timeout: 2000, tries: 1 });
            r.setServers([s.host.includes(':') ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`]);
            return r.resolveTxt(fqdn).then((rows) => rows.some((t) => t.join('') === value)).catch(() => false);
          }),
    );
    if (seen.every(Boolean)) return;
    if (Date.now() > deadline) throw new AppError('upstream', `the TXT record ${fqdn} is not served ${servers.length ? `by ${servers.map((s) => `${s.host}:${s.port}`).join(', ')}` : 'by the resolver'} after ${Math.round(timeoutMs / 1000)} s: check that the update reached the zone`);
    await sleep(500);
  }
}

export type TsigKey = { algorithm: string; name: string; secret: string };

/** Reads a TSIG key file: `<algorithm>:<name>:<secret>` on one line (knsupdate's -y form; `#` lines ignored). Never echoes the secret. */
export async function readTsigKey(file: string): Promise<TsigKey> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new AppError('unavailable', `cannot read the TSIG key file ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'}): it must be readable by mailsvc (root:mailsvc 0640)`);
  }
  const line = text.split('\n').map((l) => l.trim()).find((l) => l !== '' && !l.startsWith('#')) ?? '';
  const m = /^(hmac-(?:md5|sha1|sha224|sha256|sha384|sha512)):([A-Za-z0-9._-]{1,253}\.?):([A-Za-z0-9+/=]{4,})$/.exec(line);
  if (!m?.[1] || !m[2] || !m[3]) throw new AppError('unavailable', `the TSIG key file ${file} is not <hmac-algorithm>:<key name>:<base64 secret> (keymgr -t <name> prints one)`);
  return { algorithm: m[1], name: m[2], secret: m[3] };
}

/** Sends one RFC 2136 update with TSIG through knsupdate (the key goes on its standard input, never on a command line). */
export async function nsupdate(program: string, server: DnsServer, key: TsigKey, lines: readonly string[]): Promise<void> {
  const input = [`server ${server.host} ${server.port}`, `key ${key.algorithm}:${key.name} ${key.secret}`, ...lines, 'send', 'quit', ''].join('\n');
  await new Promise<void>((resolve, reject) => {
    let p;
    try {
      p = spawn(program, [], { stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (err) {
      reject(new AppError('unavailable', `cannot run ${program}: ${(err as Error).message}`));
      return;
    }
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), 30_000);
    p.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new AppError('unavailable', err.code === 'ENOENT' ? `${program} is not installed (Debian: apt-get install knot-dnsutils)` : `${program}: ${err.message}`));
    });
    p.on('exit', (code) => {
      clearTimeout(timer);
      // The output never carries the secret (it was only on stdin), but keep it short.
      if (code === 0 && !/error|fail|refused|notauth/i.test(out)) resolve();
      else reject(new AppError('upstream', `the dynamic update to ${server.host}:${server.port} failed: ${out.replace(key.secret, '…').trim().split('\n').slice(-2).join(' ').slice(0, 300) || `exit ${code}`}; check the TSIG key and the server's update ACL`));
    });
    p.stdin.end(input);
  });
}

/** The zone that holds `fqdn` on `server`: the nearest name upwards that has an SOA there. */
export async function zoneOf(server: DnsServer, fqdn: string): Promise<string> {
  const r = new Resolver({ timeout: 2000, tries: 2 });
  r.setServers([server.host.includes(':') ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`]);
  const labels = fqdn.split('.');
  for (let i = 0; i < labels.length - 1; i++) {
    const candidate = labels.slice(i).join('.');
    if (await r.resolveSoa(candidate).then(() => true, () => false)) return candidate;
  }
  throw new AppError('upstream', `${server.host}:${server.port} serves no zone that holds ${fqdn}: point MAILSVC_ACME_RFC2136_SERVER at the zone's primary server`);
}

/** DNS-01 by RFC 2136 dynamic updates signed with TSIG, to the authoritative server that takes them. */
export function rfc2136Solver(program: string, server: DnsServer, key: TsigKey): ChallengeSolver {
  return {
    type: 'dns-01',
    present: async (name, _token, value) => {
      const fqdn = acmeTxtName(name);
      await nsupdate(program, server, key, [`zone ${await zoneOf(server, fqdn)}.`, `update add ${fqdn}. 60 TXT "${value}"`]);
      await waitForTxt([server], fqdn, value);
    },
    cleanup: async (name, _token, value) => {
      const fqdn = acmeTxtName(name);
      await nsupdate(program, server, key, [`zone ${await zoneOf(server, fqdn)}.`, `update delete ${fqdn}. TXT "${value}"`]);
    },
    close: async () => undefined,
  };
}

/** What the dns module's Cloudflare sync offers the certs module: one TXT record in the zone that holds a name. */
export type AcmeTxtPublisher = {
  publishAcmeTxt(fqdn: string, value: string): Promise<void>;
  removeAcmeTxt(fqdn: string, value: string): Promise<void>;
};

/** DNS-01 through the Cloudflare sync of the dns module; waits until the authoritative servers serve it. */
export function cloudflareSolver(publisher: AcmeTxtPublisher, check: readonly DnsServer[]): ChallengeSolver {
  return {
    type: 'dns-01',
    present: async (name, _token, value) => {
      const fqdn = acmeTxtName(name);
      await publisher.publishAcmeTxt(fqdn, value);
      await waitForTxt(check, fqdn, value);
    },
    cleanup: async (name, _token, value) => publisher.removeAcmeTxt(acmeTxtName(name), value),
    close: async () => undefined,
  };
}
