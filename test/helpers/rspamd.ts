import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { findProgram, freePort } from './mail-daemons.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A real Rspamd in the foreground, from a copy of Debian's /etc/rspamd in a
 * temp directory (so `local.d/` is the test's MAILSVC_RSPAMD_LOCAL_DIR), its
 * workers on 127.0.0.1 ports picked at run time, its DNS pointed at the test's
 * DNS server. The proxy worker runs in milter mode, as Debian ships it.
 */
export type Rspamd = { etcDir: string; localDir: string; milterPort: number; logs(): string; stop(): Promise<void> };

export function rspamdUnavailable(): string | null {
  const missing = ['rspamd', 'rspamadm'].filter((p) => findProgram(p) === null);
  if (missing.length) return `missing ${missing.join(', ')} (Debian package rspamd)`;
  if (process.getuid?.() !== 0) return 'the test runs Rspamd as root';
  // The test runs a copy of the machine's /etc/rspamd: the package installed is not enough.
  return existsSync('/etc/rspamd/rspamd.conf') ? null : 'rspamd is installed but not configured here: no /etc/rspamd/rspamd.conf';
}

/** Copies /etc/rspamd into `<dir>/rspamd` with the test's ports and DNS server; start it later with `startRspamd`. */
export async function prepareRspamd(dir: string, dnsServer: string): Promise<{ etcDir: string; localDir: string; ports: Record<'normal' | 'controller' | 'milter', number> }> {
  const etcDir = join(dir, 'rspamd');
  cpSync('/etc/rspamd', etcDir, { recursive: true });
  for (const d of ['db', 'run', 'log']) mkdirSync(join(dir, `rspamd-${d}`), { recursive: true });
  const ports = { normal: await freePort(), controller: await freePort(), milter: await freePort() };
  const override = (name: string, text: string) => writeFileSync(join(etcDir, 'override.d', name), text);
  override('worker-normal.inc', `bind_socket = "127.0.0.1:${ports.normal}";\n`);
  override('worker-controller.inc', `bind_socket = "127.0.0.1:${ports.controller}";\n`);
  override('worker-proxy.inc', `bind_socket = "127.0.0.1:${ports.milter}";\nmilter = yes;\nupstream "local" { default = yes; self_scan = yes; }\n`);
  override('worker-fuzzy.inc', 'enabled = false;\n');
  override('logging.inc', `type = "file";\nfilename = "${join(dir, 'rspamd-log', 'rspamd.log')}";\nlevel = "info";\n`);
  override('options.inc', `dns {\n  nameserver = ["${dnsServer}"];\n  timeout = 1s;\n  retransmits = 1;\n}\n`);
  return { etcDir, localDir: join(etcDir, 'local.d'), ports };
}

export async function startRspamd(dir: string, prepared: Awaited<ReturnType<typeof prepareRspamd>>): Promise<Rspamd> {
  const { etcDir, ports } = prepared;
  const logFile = join(dir, 'rspamd-log', 'rspamd.log');
  const logs = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  const vars = [`--var=CONFDIR=${etcDir}`, `--var=LOCAL_CONFDIR=${etcDir}`, `--var=DBDIR=${join(dir, 'rspamd-db')}`, `--var=RUNDIR=${join(dir, 'rspamd-run')}`, `--var=LOGDIR=${join(dir, 'rspamd-log')}`];
  const child: ChildProcess = spawn(findProgram('rspamd') ?? 'rspamd', ['-f', '-i', '-u', 'root', '-g', 'root', '-c', join(etcDir, 'rspamd.conf'), ...vars], { stdio: 'ignore' });
  const stop = async (): Promise<void> => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  };
  // Ready when the normal worker answers /ping (loading the TLD list takes a few seconds, a minute or more on a loaded machine).
  for (let i = 0; ; i++) {
    if (child.exitCode !== null || i > 1800) {
      await stop();
      throw new Error(`rspamd did not start:\n${logs().slice(-3000)}`);
    }
    const pong = await fetch(`http://127.0.0.1:${ports.normal}/ping`).then((r) => r.text()).catch(() => '');
    if (pong.includes('pong')) break;
    await sleep(100);
  }
  return { etcDir, localDir: prepared.localDir, milterPort: ports.milter, logs, stop };
}
