/**
 * A real Debian 12 system under systemd for the installed-host test: a root
 * made by debootstrap (test/helpers/nspawn-root.sh, cached under
 * /var/cache/mailsvc-test/ by the script's hash), a throwaway overlay of it
 * per run, booted with systemd-nspawn (no network but loopback). Commands run
 * inside with `nsenter -t <guest PID 1> -a` (machinectl and systemd-run -M do
 * not work on the CI machines). `halt()` then `boot()` again on the same
 * overlay is a reboot.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT_SCRIPT = fileURLToPath(new URL('./nspawn-root.sh', import.meta.url));
export const CACHE_DIR = process.env.MAILSVC_TEST_NSPAWN_CACHE ?? '/var/cache/mailsvc-test';
const GUEST_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const has = (cmd: string, args: string[] = ['--version']): boolean => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;

/** Why the guest cannot be booted here (null: it can). */
export function nspawnUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'not root';
  if (!has('systemd-nspawn')) return 'systemd-nspawn missing (apt-get install systemd-container)';
  if (!has('debootstrap', ['--help'])) return 'debootstrap missing (apt-get install debootstrap)';
  if (!has('nsenter')) return 'nsenter missing (util-linux)';
  return null;
}

const STOCK_ROOT_SCRIPT = fileURLToPath(new URL('./nspawn-stock-root.sh', import.meta.url));

/** Where `script` run with `args` keeps its root: keyed by the script's hash and the arguments. */
function rootPath(script: string, prefix: string, args: readonly string[]): string {
  const hash = createHash('sha256').update(readFileSync(script));
  if (args.length > 0) hash.update([...args].sort().join(' '));
  return join(CACHE_DIR, `${prefix}-${hash.digest('hex').slice(0, 16)}`);
}

/**
 * The root `script` builds, built first if missing (minutes, from Debian's archive). Two test files (or two
 * runs) that ask at once share one build: the builder holds an flock on the cache's lock file, and a caller
 * that waited for it finds the root made and uses it. Throws with the build's own output when it fails.
 */
function builtRoot(script: string, prefix: string, args: readonly string[]): string {
  const root = rootPath(script, prefix, args);
  if (existsSync(join(root, 'etc', 'os-release'))) return root;
  mkdirSync(CACHE_DIR, { recursive: true });
  execFileSync('flock', ['--wait', String(40 * 60), join(CACHE_DIR, '.build.lock'), script, root, ...args], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 45 * 60_000 });
  return root;
}

/** The cached root's path (it may not exist yet). */
export function cachedRootPath(): string {
  return rootPath(ROOT_SCRIPT, 'bookworm', []);
}

/** The root with the mail daemons installed (nspawn-root.sh), built first if missing. */
export function cachedRoot(): string {
  return builtRoot(ROOT_SCRIPT, 'bookworm', []);
}

/**
 * A stock Debian 12 root (nspawn-stock-root.sh) whose apt cache holds `packages` and what they pull in,
 * downloaded, not installed; cached by the script's hash and the package list.
 */
export function cachedStockRoot(packages: readonly string[]): string {
  return builtRoot(STOCK_ROOT_SCRIPT, 'bookworm-stock', packages);
}

export type Overlay = { dir: string; merged: string; remove(): void };

/** A writable overlay over `lower` in a new temp directory (or a reflink copy where overlayfs is refused). */
export function makeOverlay(lower: string): Overlay {
  const dir = mkdtempSync('/var/tmp/mailsvc-guest-');
  const merged = join(dir, 'merged');
  for (const d of ['upper', 'work', 'merged']) mkdirSync(join(dir, d));
  const mounted = spawnSync('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${join(dir, 'upper')},workdir=${join(dir, 'work')}`, merged], { stdio: 'ignore' }).status === 0;
  if (!mounted) execFileSync('cp', ['-a', '--reflink=auto', `${lower}/.`, merged]);
  return {
    dir,
    merged,
    remove: () => {
      if (mounted) spawnSync('umount', [merged], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type RunResult = { code: number | null; stdout: string; stderr: string };
export type RunOptions = { input?: string; timeoutMs?: number; env?: Record<string, string> };

export type Guest = {
  name: string;
  pid1: number;
  /** Console output of the boot so far (for failure messages). */
  console(): string;
  run(argv: string[], opts?: RunOptions): Promise<RunResult>;
  /** `sh -c script` inside; throws with the output when it exits non-zero. */
  sh(script: string, opts?: RunOptions): Promise<string>;
  halt(): Promise<void>;
  /** Power loss: SIGKILL to the guest's PID 1, which kills every process of its PID namespace at once; resolves when nspawn is gone. */
  crash(): Promise<void>;
};

function childPid(pid: number): number | null {
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      const kids = readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
      if (kids.length) return Number(kids[0]);
    }
  } catch {
    // gone
  }
  return null;
}

function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

function collect(child: ChildProcess, timeoutMs: number, input?: string): Promise<RunResult> {
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    // A command that does not read its input closes it early: not an error.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input ?? '');
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Boots `root` (an overlay's merged dir) with systemd-nspawn; resolves once systemd says running or degraded. */
export async function bootGuest(
  root: string,
  opts: {
    binds?: { host: string; guest: string }[];
    logDir: string;
    timeoutMs?: number;
    /**
     * A network namespace the test made (`ip netns add`): the guest's network is that one, not loopback alone.
     * The guest keeps CAP_NET_ADMIN there, as --private-network gives it (nft loads its ruleset into that namespace only).
     */
    netns?: string;
  },
): Promise<Guest> {
  const name = `mailsvc-t${process.pid}-${Date.now() % 100000}`;
  const logFile = join(opts.logDir, `${name}.console`);
  const log = openSync(logFile, 'w');
  const binds = (opts.binds ?? []).map((b) => `--bind-ro=${b.host}:${b.guest}`);
  const nspawn = spawn('systemd-nspawn', ['-D', root, '--boot', '-M', name, '--register=no', '--keep-unit', ...(opts.netns ? [`--network-namespace-path=/run/netns/${opts.netns}`, '--capability=CAP_NET_ADMIN'] : ['--private-network']), '--console=read-only', ...binds], {
    stdio: ['ignore', log, log],
    env: { PATH: process.env.PATH ?? GUEST_PATH, SYSTEMD_NSPAWN_UNIFIED_HIERARCHY: '1' },
  });
  closeSync(log);
  let exited = false;
  nspawn.on('exit', () => (exited = true));
  const consoleText = (): string => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');

  const run = (argv: string[], o: RunOptions = {}): Promise<RunResult> => {
    const env = Object.entries({ PATH: GUEST_PATH, LANG: 'C.UTF-8', HOME: '/root', ...(o.env ?? {}) }).map(([k, v]) => `${k}=${v}`);
    const child = spawn('nsenter', ['-t', String(guest.pid1), '-a', 'env', '-i', ...env, ...argv], { stdio: ['pipe', 'pipe', 'pipe'] });
    return collect(child, o.timeoutMs ?? 120_000, o.input);
  };
  const guest: Guest = {
    name,
    pid1: 0,
    console: consoleText,
    run,
    async sh(script, o) {
      const r = await run(['sh', '-c', script], o);
      if (r.code !== 0) throw new Error(`guest: sh -c ${JSON.stringify(script)} exited ${r.code}\n${r.stdout}\n${r.stderr}`);
      return r.stdout;
    },
    async crash() {
      if (exited) return;
      const done = new Promise<void>((r) => nspawn.once('exit', () => r()));
      try {
        process.kill(guest.pid1, 'SIGKILL');
      } catch {
        nspawn.kill('SIGKILL');
      }
      const t = setTimeout(() => nspawn.kill('SIGKILL'), 30_000);
      await done;
      clearTimeout(t);
    },
    async halt() {
      if (exited) return;
      const done = new Promise<void>((r) => nspawn.once('exit', () => r()));
      nspawn.kill('SIGTERM');
      const t = setTimeout(() => nspawn.kill('SIGKILL'), 90_000);
      await done;
      clearTimeout(t);
    },
  };

  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  let state = '';
  while (Date.now() < deadline) {
    if (exited) throw new Error(`systemd-nspawn exited during boot:\n${consoleText()}`);
    // nspawn's first child is a short-lived intermediate: the guest's PID 1 is the child running systemd.
    const pid = childPid(nspawn.pid ?? 0);
    if (pid && commOf(pid) === 'systemd') {
      guest.pid1 = pid;
      const r = await run(['systemctl', 'is-system-running'], { timeoutMs: 10_000 });
      state = r.stdout.trim();
      if (state === 'running' || state === 'degraded') return guest;
    }
    await sleep(250);
  }
  await guest.halt();
  throw new Error(`the guest did not finish booting (state ${state || 'unknown'}):\n${consoleText()}`);
}
