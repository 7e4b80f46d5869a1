import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { CLI_BIN } from './cli.js';
import type { CliResult } from './cli.js';
import { findProgram } from './mail-daemons.js';
import { skipNotice } from './services.js';

const execFileP = promisify(execFile);

/** Why two network namespaces cannot be made here (needs root and ip, nft), or null. Prints the skip notice. */
export function netnsUnavailable(): string | null {
  let why: string | null = null;
  if (process.getuid?.() !== 0) why = 'not root (ip netns needs it)';
  else if (!findProgram('ip') || !findProgram('nft')) why = 'ip (iproute2) or nft (nftables) is not installed';
  if (why) skipNotice('network namespaces for the firewall tests', why);
  return why;
}

export type NetnsPair = {
  /** The namespace whose firewall is under test, and its address on the veth link. */
  server: string;
  serverAddr: string;
  /** The namespace the connections come from, and its address. */
  client: string;
  clientAddr: string;
  /** Runs a program inside a namespace. */
  exec(ns: string, file: string, args: string[]): Promise<string>;
  /** The built CLI inside `ns`, with exactly this environment (plus PATH). */
  cli(ns: string, args: string[], env: Record<string, string>): Promise<CliResult>;
  /** Listens on these TCP ports at serverAddr inside the server namespace. */
  listen(ports: number[]): Promise<void>;
  /** True when a TCP connection from the client namespace to serverAddr:port opens within 1.5 s. */
  connects(port: number): Promise<boolean>;
  destroy(): Promise<void>;
};

const LISTENER = `const net=require('net');let n=0;const ports=process.argv.slice(1).map(Number);for(const p of ports){net.createServer(s=>s.end()).listen(p,process.env.ADDR,()=>{if(++n===ports.length)console.log('ready')})}`;
const CONNECT = `const s=require('net').connect({host:process.env.ADDR,port:Number(process.argv[1])});const t=setTimeout(()=>{console.log('fail');process.exit(0)},1500);s.on('connect',()=>{console.log('ok');process.exit(0)});s.on('error',()=>{console.log('fail');process.exit(0)});`;

/**
 * Two network namespaces joined by a veth pair (10.231.x.1 and .2/24): the
 * firewall is applied in `server`, connections come from `client`. Nothing
 * here touches the machine's own namespace or ruleset.
 */
export async function makeNetnsPair(): Promise<NetnsPair> {
  const tag = randomBytes(3).toString('hex');
  const net = 10 + (parseInt(tag, 16) % 200);
  const server = `msvc-s-${tag}`;
  const client = `msvc-c-${tag}`;
  const serverAddr = `10.231.${net}.1`;
  const clientAddr = `10.231.${net}.2`;
  const ip = (...args: string[]) => execFileP('ip', args, { timeout: 15_000 });
  await ip('netns', 'add', server);
  await ip('netns', 'add', client);
  await ip('link', 'add', `vs${tag}`, 'netns', server, 'type', 'veth', 'peer', 'name', `vc${tag}`, 'netns', client);
  await ip('-n', server, 'addr', 'add', `${serverAddr}/24`, 'dev', `vs${tag}`);
  await ip('-n', client, 'addr', 'add', `${clientAddr}/24`, 'dev', `vc${tag}`);
  for (const [ns, dev] of [[server, `vs${tag}`], [client, `vc${tag}`]] as const) {
    await ip('-n', ns, 'link', 'set', dev, 'up');
    await ip('-n', ns, 'link', 'set', 'lo', 'up');
  }
  const children: ChildProcess[] = [];
  const exec = async (ns: string, file: string, args: string[]): Promise<string> => (await execFileP('ip', ['netns', 'exec', ns, file, ...args], { timeout: 30_000 })).stdout;
  return {
    server, serverAddr, client, clientAddr, exec,
    cli: (ns, args, env) =>
      new Promise((resolve) => {
        execFile('ip', ['netns', 'exec', ns, process.execPath, CLI_BIN, ...args], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, timeout: 30_000 }, (err, stdout, stderr) => {
          const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
          resolve({ code, stdout, stderr });
        });
      }),
    listen: (ports) =>
      new Promise((resolve, reject) => {
        const child = spawn('ip', ['netns', 'exec', server, process.execPath, '-e', LISTENER, ...ports.map(String)], { env: { ...process.env, ADDR: serverAddr }, stdio: ['ignore', 'pipe', 'inherit'] });
        children.push(child);
        child.stdout.on('data', (d: Buffer) => (d.toString().includes('ready') ? resolve() : undefined));
        child.on('exit', (code) => reject(new Error(`listener exited ${code}`)));
      }),
    async connects(port) {
      const out = (await execFileP('ip', ['netns', 'exec', client, process.execPath, '-e', CONNECT, String(port)], { env: { ...process.env, ADDR: serverAddr }, timeout: 15_000 })).stdout;
      return out.trim() === 'ok';
    },
    async destroy() {
      for (const c of children) c.kill('SIGKILL');
      await ip('netns', 'del', server).catch(() => undefined);
      await ip('netns', 'del', client).catch(() => undefined);
    },
  };
}
