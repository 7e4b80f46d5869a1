import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CLI_BIN, REPO_ROOT } from './helpers/cli.js';
import { findProgram } from './helpers/mail-daemons.js';
import { skipNotice } from './helpers/services.js';

const execFileP = promisify(execFile);
const UNITS = join(REPO_ROOT, 'deploy/systemd');
const INSTALLED = '/usr/local/bin/mailsvc';

const analyze = findProgram('systemd-analyze');
if (!analyze) skipNotice('systemd-analyze', 'not installed');

/**
 * The units as shipped, with ExecStart pointing at this checkout's CLI instead
 * of /usr/local/bin/mailsvc (verify checks that the program exists; nothing is
 * started). Every other line is left as it is.
 */
function renderUnits(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-units-'));
  for (const name of readdirSync(UNITS).filter((n) => /\.(service|socket)$/.test(n))) {
    const text = readFileSync(join(UNITS, name), 'utf8');
    writeFileSync(join(dir, name), text.replaceAll(`ExecStart=${INSTALLED} `, `ExecStart=${process.execPath} ${CLI_BIN} `));
  }
  return dir;
}

async function run(args: string[]): Promise<{ code: number; out: string }> {
  try {
    const r = await execFileP(analyze ?? 'systemd-analyze', args, { timeout: 30_000 });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, out: (e.stdout ?? '') + (e.stderr ?? '') };
  }
}

async function exposure(unit: string): Promise<number> {
  const r = await run(['security', '--offline=true', '--no-pager', unit]);
  const m = /Overall exposure level for [\w.@-]+: (\d+(?:\.\d+)?)/.exec(r.out);
  if (!m) throw new Error(`no exposure level in: ${r.out.slice(-500)}`);
  return Number(m[1]);
}

const unitText = (name: string): string => readFileSync(join(UNITS, name), 'utf8');
const directives = (name: string, key: string): string[] =>
  unitText(name)
    .split('\n')
    .filter((l) => l.startsWith(`${key}=`))
    .map((l) => l.slice(key.length + 1));

describe('systemd units (deploy/systemd)', () => {
  it.skipIf(!analyze)('systemd-analyze verify accepts all three units', async () => {
    const dir = renderUnits();
    const files = ['mailsvc.service', 'mailsvc-helper.service', 'mailsvc-helper.socket'].map((n) => join(dir, n));
    const r = await run(['verify', ...files]);
    expect(r.out.trim()).toBe('');
    expect(r.code).toBe(0);
  });

  it.skipIf(!analyze)('mailsvc.service: systemd-analyze security rates its exposure at most 3.0', async () => {
    const level = await exposure(join(renderUnits(), 'mailsvc.service'));
    console.info(`mailsvc.service exposure: ${level}`);
    expect(level).toBeLessThanOrEqual(3.0);
  });

  it.skipIf(!analyze)('mailsvc-helper.service, a root service, stays tight too (at most 3.0)', async () => {
    const level = await exposure(join(renderUnits(), 'mailsvc-helper.service'));
    console.info(`mailsvc-helper.service exposure: ${level}`);
    expect(level).toBeLessThanOrEqual(3.0);
  });

  it('the API runs as mailsvc without privileges and writes only its own directories', () => {
    const one = (key: string): string[] => directives('mailsvc.service', key);
    expect(one('User')).toEqual(['mailsvc']);
    expect(one('ExecStart')).toEqual([`${INSTALLED} serve`]);
    expect(one('NoNewPrivileges')).toEqual(['yes']);
    expect(one('CapabilityBoundingSet')).toEqual(['']);
    expect(one('ProtectSystem')).toEqual(['strict']);
    expect(one('ReadWritePaths')).toEqual(['/var/lib/mailsvc /var/log/mailsvc', '-/var/spool/postfix/mailsvc']);
    expect(one('RestrictAddressFamilies')).toEqual(['AF_UNIX AF_INET AF_INET6 AF_NETLINK']);
    expect(one('MemoryDenyWriteExecute')).toEqual([]);
  });

  it('the helper socket is 0660 root:mailsvc at /run/mailsvc/helper.sock, and the helper runs `mailsvc helper serve`', () => {
    const one = (key: string): string[] => directives('mailsvc-helper.socket', key);
    expect(one('ListenStream')).toEqual(['/run/mailsvc/helper.sock']);
    expect(one('SocketMode')).toEqual(['0660']);
    expect(one('SocketGroup')).toEqual(['mailsvc']);
    expect(directives('mailsvc-helper.service', 'ExecStart')).toEqual([`${INSTALLED} helper serve`]);
    expect(directives('mailsvc-helper.service', 'NoNewPrivileges')).toEqual(['yes']);
  });
});

// Why MemoryDenyWriteExecute stays off: systemd 254+ implements it with the kernel's
// PR_SET_MDWE (older versions with a seccomp filter that refuses the same mprotect
// calls). Node under it dies as soon as V8 compiles code. If this ever passes, the
// setting can be turned on.
const python = findProgram('python3');
const MDWE = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0:
    sys.exit(99)
os.execv(sys.argv[1], [sys.argv[1], '-e', 'let s = 0; for (let i = 0; i < 1e7; i++) s += i; console.log(s)'])
`;

describe('MemoryDenyWriteExecute and Node', () => {
  it.skipIf(!python)('Node aborts under memory-deny-write-execute (PR_SET_MDWE), so the units leave it off', async () => {
    const r = await execFileP(python ?? 'python3', ['-c', MDWE, process.execPath], { timeout: 30_000 }).then(
      () => ({ code: 0, signal: null as string | null }),
      (e: { code?: number; signal?: string }) => ({ code: e.code ?? null, signal: e.signal ?? null }),
    );
    if (r.code === 99) {
      skipNotice('PR_SET_MDWE', 'this kernel (before 6.3) has no memory-deny-write-execute prctl');
      return;
    }
    expect(r.code === 0 && r.signal === null).toBe(false);
  });
});
