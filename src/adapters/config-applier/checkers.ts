import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { run } from '../exec.js';
import type { ExecResult } from '../exec.js';
import type { CheckOutcome, ConfigChecker } from './types.js';

export type RunFn = (file: string, args: readonly string[], opts: { timeoutMs?: number; maxBytes?: number }) => Promise<ExecResult>;
type NewFile = { path: string; content: Buffer };

const CHECK_TIMEOUT_MS = 60_000;

/** The last lines of a checker's output: enough to say what it disliked. */
function tail(r: ExecResult): string {
  const text = `${r.stderr}\n${r.stdout}`.trim().split('\n').filter((l) => l.trim() !== '');
  return text.slice(-5).join(' | ').slice(0, 2000) || 'no output';
}

async function runChecker(exec: RunFn, file: string, args: string[]): Promise<CheckOutcome> {
  let r: ExecResult;
  try {
    r = await exec(file, args, { timeoutMs: CHECK_TIMEOUT_MS, maxBytes: 4 * 1024 * 1024 });
  } catch (err) {
    return { ok: false, detail: `cannot run ${file}: ${err instanceof Error ? err.message : String(err)}` };
  }
  return r.code === 0 ? { ok: true } : { ok: false, detail: `${file} exited ${r.code}: ${tail(r)}` };
}

/** A scratch directory, removed after `fn`. */
async function withScratch<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-check-'));
  try {
    return await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A copy of a daemon's configuration directory with the new files laid over
 * it: the checker reads the whole configuration as it will be, while the
 * live directory still holds the old one. Sockets and other special files
 * are left out of the copy.
 */
function stageTree(root: string, files: readonly NewFile[], into: string): void {
  cpSync(root, into, {
    recursive: true,
    dereference: false,
    filter: (src) => {
      const st = lstatSync(src);
      return st.isDirectory() || st.isFile() || st.isSymbolicLink();
    },
  });
  for (const f of files) {
    const rel = relative(resolve(root), resolve(f.path));
    if (rel.startsWith('..') || rel === '') throw new Error(`${f.path} is not inside ${root}`);
    mkdirSync(dirname(join(into, rel)), { recursive: true });
    rmSync(join(into, rel), { force: true });
    writeFileSync(join(into, rel), f.content);
  }
}

/** `postfix -c <staged copy of DIR> check`: main.cf, master.cf and the directory layout. */
export function postfixChecker(configDir: string, exec: RunFn = run): ConfigChecker {
  return {
    name: 'postfix check',
    check: (files) =>
      withScratch(async (dir) => {
        const staged = join(dir, 'postfix');
        stageTree(configDir, files, staged);
        // Debian's makedefs.out is a symlink into /usr/share/postfix; postfix-script forgives that only
        // at /etc/postfix, and would warn "symlink leaves directory" (into syslog) for the copy.
        const makedefs = join(staged, 'makedefs.out');
        if (lstatSync(makedefs, { throwIfNoEntry: false })?.isSymbolicLink()) {
          const text = existsSync(makedefs) ? readFileSync(makedefs) : null;
          rmSync(makedefs);
          if (text) writeFileSync(makedefs, text);
        }
        return runChecker(exec, 'postfix', ['-c', staged, 'check']);
      }),
  };
}

/** `fail2ban-client -c <staged copy of DIR> -t`: every jail, filter and action as they will be. */
export function fail2banChecker(configDir: string, exec: RunFn = run): ConfigChecker {
  return {
    name: 'fail2ban-client -t',
    check: (files) =>
      withScratch(async (dir) => {
        const staged = join(dir, 'fail2ban');
        stageTree(configDir, files, staged);
        return runChecker(exec, 'fail2ban-client', ['-c', staged, '-t']);
      }),
  };
}

/**
 * `rspamadm --var=LOCAL_CONFDIR=<staged copy> configtest`. `localConfDir` is
 * the directory holding local.d/ and override.d/ (the parent of
 * MAILSVC_RSPAMD_LOCAL_DIR); the main rspamd.conf stays where it is.
 */
export function rspamdChecker(localConfDir: string, exec: RunFn = run): ConfigChecker {
  return {
    name: 'rspamadm configtest',
    check: (files) =>
      withScratch(async (dir) => {
        const staged = join(dir, 'rspamd');
        stageTree(localConfDir, files, staged);
        return runChecker(exec, 'rspamadm', [`--var=LOCAL_CONFDIR=${staged}`, 'configtest']);
      }),
  };
}

/**
 * `doveconf -c <staged copy>/dovecot.conf -n`: the whole configuration parsed,
 * includes (conf.d/*.conf) resolved in the copy. Its stdout is the dump, so
 * only stderr says what it disliked.
 */
export function dovecotChecker(configFile: string, exec: RunFn = run): ConfigChecker {
  return {
    name: 'doveconf -n',
    check: (files) =>
      withScratch(async (dir) => {
        const staged = join(dir, 'dovecot');
        stageTree(dirname(configFile), files, staged);
        const quiet: RunFn = async (file, args, opts) => ({ ...(await exec(file, args, opts)), stdout: '' });
        return runChecker(quiet, 'doveconf', ['-c', join(staged, basename(configFile)), '-n']);
      }),
  };
}

/**
 * `nft -c -f <copy>` for each ruleset file: parsed and evaluated by the
 * kernel without being committed. Without CAP_NET_ADMIN it is run in a new
 * user and network namespace, which never touches the host's ruleset either.
 */
export function nftablesChecker(exec: RunFn = run, asRoot: boolean = process.getuid?.() === 0): ConfigChecker {
  return {
    name: 'nft -c',
    check: (files) =>
      withScratch(async (dir) => {
        for (const f of files) {
          const copy = join(dir, basename(f.path));
          writeFileSync(copy, f.content);
          const outcome =
            asRoot ? await runChecker(exec, 'nft', ['-c', '-f', copy]) : await runChecker(exec, 'unshare', ['-rn', 'nft', '-c', '-f', copy]);
          if (!outcome.ok) return { ok: false, detail: outcome.detail.replaceAll(copy, f.path) };
        }
        return { ok: true };
      }),
  };
}

/** `systemd-analyze verify` on copies that keep the unit names (the suffix says the unit type). */
export function systemdChecker(exec: RunFn = run): ConfigChecker {
  return {
    name: 'systemd-analyze verify',
    check: (files) =>
      withScratch(async (dir) => {
        const copies = files.map((f) => {
          const copy = join(dir, basename(f.path));
          writeFileSync(copy, f.content);
          return copy;
        });
        return runChecker(exec, 'systemd-analyze', ['verify', ...copies]);
      }),
  };
}

/**
 * In a staged nginx tree, `include <live dir>/…` (Debian's nginx.conf names
 * /etc/nginx/sites-enabled/* and conf.d/*.conf by absolute path) made to
 * read the staged copy, so the new files are the ones checked.
 */
function pointIncludesAt(staged: string, live: string): void {
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        const text = readFileSync(p, 'utf8');
        const next = text.replace(/^(\s*include\s+)(\S+)/gm, (m, head: string, target: string) => (target.startsWith(`${live}/`) ? `${head}${staged}/${target.slice(live.length + 1)}` : m));
        if (next !== text) writeFileSync(p, next);
      }
    }
  };
  walk(staged);
}

/**
 * `nginx -t -q -c <staged copy>/nginx.conf`: the whole configuration parsed,
 * includes (sites-enabled/, snippets/, conf.d/; by a relative path or by an
 * absolute one inside the configuration directory) resolved in a copy of the
 * directory that holds nginx.conf, with the new files laid over it. An
 * include elsewhere still reads the live file. nginx opens the log files the
 * configuration names (it appends nothing to them).
 */
export function nginxChecker(configFile: string, exec: RunFn = run): ConfigChecker {
  return {
    name: 'nginx -t',
    check: (files) =>
      withScratch(async (dir) => {
        const staged = join(dir, 'nginx');
        stageTree(dirname(configFile), files, staged);
        pointIncludesAt(staged, dirname(configFile));
        return runChecker(exec, 'nginx', ['-t', '-q', '-p', `${staged}/`, '-c', join(staged, basename(configFile))]);
      }),
  };
}
