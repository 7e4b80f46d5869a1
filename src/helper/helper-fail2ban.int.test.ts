import { helperConfig } from '../../test/helpers/helper-config.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pino from 'pino';
import { findProgram } from '../../test/helpers/mail-daemons.js';
import { skipNotice } from '../../test/helpers/services.js';
import { HelperError } from '../adapters/helper-client.js';
import { HelperRunner } from './runner.js';
import { startHelperServer } from './server.js';
import { SocketHelperClient } from './socket-client.js';

const execFileP = promisify(execFile);
const client = findProgram('fail2ban-client');
const available = client !== null && existsSync('/etc/fail2ban/fail2ban.conf');
if (!available) skipNotice('fail2ban-client with /etc/fail2ban', 'not installed');

// A real fail2ban server of its own (a copy of /etc/fail2ban, one jail without
// actions, its own socket), reloaded through the helper's real socket.
describe.skipIf(!available)('reload fail2ban through the helper, on a real fail2ban server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-f2b-helper-'));
  const conf = join(dir, 'conf');
  const sock = join(dir, 'f2b.sock');
  const logFile = join(dir, 'fail2ban.log');
  const f2b = (...args: string[]): Promise<unknown> => execFileP(client ?? 'fail2ban-client', ['-c', conf, '-s', sock, '-p', join(dir, 'f2b.pid'), ...args], { timeout: 30_000 });
  let closeHelper: () => Promise<void> = async () => undefined;
  let helper: SocketHelperClient;

  beforeAll(async () => {
    cpSync('/etc/fail2ban', conf, { recursive: true });
    rmSync(join(conf, 'jail.d'), { recursive: true, force: true });
    writeFileSync(join(conf, 'fail2ban.local'), `[Definition]\nlogtarget = ${logFile}\nsocket = ${sock}\npidfile = ${join(dir, 'f2b.pid')}\ndbfile = :memory:\n`);
    writeFileSync(join(dir, 'app.log'), '');
    writeFileSync(join(conf, 'jail.local'), `[DEFAULT]\nbackend = polling\n[mailsvc-helper-test]\nenabled = true\nfilter =\naction =\nlogpath = ${join(dir, 'app.log')}\n`);
    await f2b('start');
    const cfg = helperConfig({ doveadm: 'doveadm', dovecotConfig: undefined, postfixConfigDir: '/etc/postfix', fail2banSocket: sock, fail2banConfigDir: conf });
    const path = join(dir, 'helper.sock');
    const log = pino({ level: 'silent' });
    closeHelper = (await startHelperServer({ path, group: null }, new HelperRunner(cfg, log), log)).close;
    helper = new SocketHelperClient(path);
  }, 60_000);

  afterAll(async () => {
    await closeHelper();
    await f2b('stop').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs fail2ban-client -c <dir> -s <socket> reload: the server reloads its jails', async () => {
    const r = await helper.run('reload', ['fail2ban']);
    expect(r.code).toBe(0);
    expect(readFileSync(logFile, 'utf8')).toMatch(/Jail 'mailsvc-helper-test' reloaded/);
  });

  it('a fail2ban that is not running is "unavailable" (503 / exit 69), saying how to start it, with the exit code', async () => {
    await f2b('stop');
    const err = await helper.run('reload', ['fail2ban']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HelperError);
    expect((err as HelperError).kind).toBe('unavailable');
    expect((err as HelperError).exec).toEqual({ kind: 'exit', code: 255 });
    expect((err as HelperError).message).toMatch(/fail2ban is not running \(no socket at .*\): start it/);
  });
});
