/**
 * Issue 34, item 5: one settings file. The service and the CLI run as root
 * read the same settings file, with nothing in the environment but where the
 * data is (a checkout's; an installed host needs not even that: its file is
 * /etc/mailsvc/mailsvc.conf). Before, the socket settings lived in
 * mailsvc.env, which only the units read, and `mailsvc doctor` as root
 * reported the hook and the policy service down while they ran.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, buildCli, runCli } from './helpers/cli.js';
import { freePort } from './helpers/mail-daemons.js';

type Report = { checks: { id: string; status: string; detail: string }[] };

async function until<T>(probe: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('one settings file: the CLI as root sees the sockets the service serves', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-onefile-'));
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  const doctor = async (dataDir: string): Promise<Map<string, { status: string; detail: string }>> => {
    // The whole environment besides PATH: where the data is, nothing else.
    const r = await runCli(['doctor', '--json'], { env: { MAILSVC_DATA_DIR: dataDir }, timeoutMs: 120_000 });
    const report = JSON.parse(r.stdout) as Report;
    return new Map(report.checks.map((c) => [c.id, c]));
  };

  it('the service started from the file serves the hook and the policy socket; doctor as root with an empty environment finds both', async () => {
    const data = join(dir, 'data');
    mkdirSync(join(dir, 'spool'), { recursive: true });
    mkdirSync(data, { recursive: true });
    const api = await freePort();
    const settings = [
      `MAILSVC_API_PORT=${api}`,
      `MAILSVC_POLICY_LISTEN=unix:${join(dir, 'spool/policy')}`,
      `MAILSVC_MAIL_AUTH_SOCKET=${join(dir, 'hook.sock')}`,
      'MAILSVC_ADMIN_PASSWORD=correct horse battery staple',
      `MAILSVC_HELPER=unix:${join(dir, 'no-helper.sock')}`,
      'MAILSVC_DOCTOR_TLS_PORTS=off',
      '',
    ].join('\n');
    writeFileSync(join(data, 'mailsvc.conf'), settings, { mode: 0o640 });
    child = spawn(process.execPath, [buildCli(), 'serve'], { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', MAILSVC_DATA_DIR: data }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    await until(async () => ((await fetch(`http://127.0.0.1:${api}/health`)).ok ? true : undefined)).catch((err: unknown) => {
      throw new Error(`the service did not answer: ${stderr}`, { cause: err });
    });

    const seen = await doctor(data);
    expect(seen.get('socket.policy'), JSON.stringify(seen.get('socket.policy'))).toMatchObject({ status: 'ok' });
    expect(seen.get('socket.auth-hook'), JSON.stringify(seen.get('socket.auth-hook'))).toMatchObject({ status: 'ok' });

    // Not vacuous: the same doctor on a settings file without the socket lines looks where nothing listens.
    const other = join(dir, 'other');
    mkdirSync(other);
    const unserved = settings.replace(/^MAILSVC_(POLICY_LISTEN|MAIL_AUTH_SOCKET)=.*\n/gm, '');
    writeFileSync(join(other, 'mailsvc.conf'), `${unserved}MAILSVC_POLICY_LISTEN=unix:${join(other, 'policy')}\n`);
    const blind = await doctor(other);
    expect(blind.get('socket.policy')?.status).not.toBe('ok');
    expect(blind.get('socket.auth-hook')?.status).not.toBe('ok');
  }, 240_000);
});
