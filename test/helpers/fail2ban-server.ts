import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findProgram } from './mail-daemons.js';
import { skipNotice } from './services.js';

const execFileP = promisify(execFile);

/** Why a private fail2ban server cannot run here, or null. Prints the skip notice. */
export function fail2banUnavailable(): string | null {
  let why: string | null = null;
  if (!findProgram('fail2ban-client') || !existsSync('/etc/fail2ban/fail2ban.conf')) why = 'fail2ban-client with /etc/fail2ban is not installed';
  else if (!findProgram('unshare')) why = 'unshare (util-linux) is not installed';
  if (why) skipNotice('a private fail2ban server', why);
  return why;
}

export type Fail2banServer = {
  configDir: string;
  socket: string;
  /** The settings that point mailsvc at this server, with the helper run in-process. */
  env: Record<string, string>;
  client(...args: string[]): Promise<string>;
  stop(): Promise<void>;
};

/**
 * A fail2ban server of its own: a copy of /etc/fail2ban without jail.d, the
 * given jails without actions (a ban is only recorded, nothing touches a
 * firewall), `backend = polling` on an empty temp log, its own socket, pid
 * file, in-memory database and log, started inside `unshare -rn` so that
 * it has no network at all. Never the machine's fail2ban.
 */
export async function startFail2ban(jails: readonly string[], opts: { ignoreip?: string; bantime?: number } = {}): Promise<Fail2banServer> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-f2b-'));
  const configDir = join(dir, 'conf');
  const socket = join(dir, 'f2b.sock');
  cpSync('/etc/fail2ban', configDir, { recursive: true });
  rmSync(join(configDir, 'jail.d'), { recursive: true, force: true });
  writeFileSync(join(configDir, 'fail2ban.local'), `[Definition]\nlogtarget = ${join(dir, 'fail2ban.log')}\nsocket = ${socket}\npidfile = ${join(dir, 'f2b.pid')}\ndbfile = :memory:\n`);
  writeFileSync(join(dir, 'app.log'), '');
  const defaults = ['[DEFAULT]', 'backend = polling', `bantime = ${opts.bantime ?? 600}`, `ignoreip = ${opts.ignoreip ?? '127.0.0.1/8 ::1'}`];
  const sections = jails.flatMap((j) => [`[${j}]`, 'enabled = true', 'filter =', 'action =', `logpath = ${join(dir, 'app.log')}`]);
  writeFileSync(join(configDir, 'jail.local'), [...defaults, ...sections].join('\n') + '\n');
  const base = ['-c', configDir, '-s', socket];
  const client = async (...args: string[]): Promise<string> => (await execFileP('fail2ban-client', [...base, ...args], { timeout: 30_000 })).stdout;
  await execFileP('unshare', ['-rn', 'fail2ban-client', ...base, 'start'], { timeout: 60_000 });
  return {
    configDir,
    socket,
    env: { MAILSVC_HELPER: 'direct', MAILSVC_FAIL2BAN_SOCKET: socket, MAILSVC_FAIL2BAN_CONFIG_DIR: configDir },
    client,
    async stop() {
      await client('stop').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
