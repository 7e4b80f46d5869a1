import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findProgram, freePort } from './mail-daemons.js';

const execFileP = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A real authoritative DNS server: knotd from a configuration in a temp
 * directory, on 127.0.0.1 and a UDP/TCP port picked at run time, serving the
 * given zones; records are changed with dynamic updates (knsupdate), as an
 * administrator (or the Cloudflare stand-in) would.
 */
export type Knot = {
  port: number;
  /** `127.0.0.1:<port>`, for MAILSVC_DNS_RESOLVER / MAILSVC_DNS_AUTHORITATIVE. */
  address: string;
  /** Sends one dynamic update: lines such as `update add name. 60 TXT "v=spf1 -all"` (server, zone and send are added). */
  update(zone: string, lines: readonly string[]): Promise<void>;
  /** `kdig @127.0.0.1 -p <port> +short <name> <type>` lines. */
  dig(name: string, type: string): Promise<string[]>;
  stop(): Promise<void>;
};

export function knotUnavailable(): string | null {
  const missing = ['knotd', 'knsupdate', 'kdig'].filter((p) => findProgram(p) === null);
  return missing.length ? `missing ${missing.join(', ')} (Debian packages knot, knot-dnsutils)` : null;
}

/**
 * Starts knotd with each zone holding an SOA, an NS and the given extra lines
 * (relative to the zone). Zones named in `signed` are DNSSEC-signed by knot
 * itself (automatic signing, its default policy: ECDSA P-256, keys made at
 * start), and re-signed after every dynamic update.
 * With `tsig`, updates must also be signed with that key (RFC 2136 + TSIG); `update` signs them.
 */
export async function startKnot(zones: Record<string, readonly string[]>, opts: { signed?: readonly string[]; tsig?: { algorithm: string; name: string; secret: string } } = {}): Promise<Knot> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-knot-'));
  const port = await freePort();
  const zoneConf: string[] = [];
  for (const [zone, lines] of Object.entries(zones)) {
    writeFileSync(
      join(dir, `${zone}.zone`),
      [`$ORIGIN ${zone}.`, '$TTL 60', `@ SOA ns1.${zone}. hostmaster.${zone}. 1 3600 600 86400 60`, `@ NS ns1.${zone}.`, 'ns1 A 127.0.0.1', ...lines, ''].join('\n'),
    );
    zoneConf.push(`  - domain: ${zone}`, `    file: ${join(dir, `${zone}.zone`)}`, '    acl: local-update', '    zonefile-sync: -1', '    zonefile-load: difference-no-serial', '    journal-content: all');
    if (opts.signed?.includes(zone)) zoneConf.push('    dnssec-signing: on');
  }
  writeFileSync(
    join(dir, 'knot.conf'),
    [
      'server:',
      `  rundir: ${dir}`,
      `  listen: 127.0.0.1@${port}`,
      'database:',
      `  storage: ${dir}`,
      'control:',
      `  listen: ${join(dir, 'knot.sock')}`,
      'log:',
      '  - target: stderr',
      '    any: warning',
      ...(opts.tsig ? ['key:', `  - id: ${opts.tsig.name}`, `    algorithm: ${opts.tsig.algorithm}`, `    secret: ${opts.tsig.secret}`] : []),
      'acl:',
      '  - id: local-update',
      '    address: 127.0.0.1',
      ...(opts.tsig ? [`    key: ${opts.tsig.name}`] : []),
      '    action: update',
      'zone:',
      ...zoneConf,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(findProgram('knotd') ?? 'knotd', ['-c', join(dir, 'knot.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const dig = async (name: string, type: string): Promise<string[]> => {
    const r = await execFileP('kdig', [`@127.0.0.1`, '-p', String(port), '+short', '+timeout=1', '+retry=0', name, type], { timeout: 5000 });
    return r.stdout.split('\n').filter(Boolean);
  };
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const first = Object.keys(zones)[0] ?? '';
  for (let i = 0; ; i++) {
    if (child.exitCode !== null || i > 100) {
      await stop();
      throw new Error(`knotd did not start: ${stderr}`);
    }
    const signedReady = await Promise.all((opts.signed ?? []).map(async (z) => (await dig(z, 'DNSKEY').catch(() => [])).length > 0));
    if ((await dig(first, 'SOA').catch(() => [])).length > 0 && signedReady.every(Boolean)) break;
    await sleep(100);
  }
  return {
    port,
    address: `127.0.0.1:${port}`,
    dig,
    update: async (zone, lines) => {
      const key = opts.tsig ? [`key ${opts.tsig.algorithm}:${opts.tsig.name} ${opts.tsig.secret}`] : [];
      const input = [`server 127.0.0.1 ${port}`, ...key, `zone ${zone}.`, ...lines, 'send', 'quit', ''].join('\n');
      await new Promise<void>((resolve, reject) => {
        const p = spawn('knsupdate', [], { stdio: ['pipe', 'pipe', 'pipe'] });
        let out = '';
        p.stdout.on('data', (d: Buffer) => (out += d.toString()));
        p.stderr.on('data', (d: Buffer) => (out += d.toString()));
        p.on('exit', (code) => (code === 0 && !/error|fail/i.test(out) ? resolve() : reject(new Error(`knsupdate: ${code} ${out}`))));
        p.stdin.end(input);
      });
    },
    stop,
  };
}
