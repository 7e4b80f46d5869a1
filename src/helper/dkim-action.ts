import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { chmod, chown } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { exec } from '../adapters/exec.js';
import type { HelperResult } from '../adapters/helper-client.js';
import { LocalFileHost, applyConfig, rspamdChecker } from '../adapters/config-applier/index.js';
import type { ApplyResult, DaemonReloader } from '../adapters/config-applier/index.js';
import { renderDkimSigning } from '../adapters/rspamd/dkim-signing.js';
import { dkimKeyDir, dkimKeyPath, keyFileContent, signingPaths } from '../adapters/rspamd/dkim-files.js';
import { postsrsdChecker, readExcludeDomains, setExcludeDomains } from '../adapters/postsrsd/postsrsd.js';
import { groupId } from '../config/mail-settings.js';
import type { DkimKeyAlgorithm } from '../shared/dkim-names.js';
import type { Command, HelperConfig, RunContext } from './action-types.js';
import { publicApplyFailure } from './failure.js';
import type { SigningSet } from './dkim-param.js';

/**
 * The helper's DKIM and SRS file work (docs/helper.md): key files, Rspamd's
 * dkim_signing.conf and postsrsd's excluded domains, each rendered here from
 * validated names and a parsed key, never from file content a caller sends.
 */

const answer = (value: Record<string, unknown>): HelperResult => ({ code: 0, stdout: JSON.stringify(value), stderr: '' });
const skipped = (cfg: HelperConfig): HelperResult => answer({ ok: true, status: 'skipped', detail: `${cfg.rspamdLocalDir} does not exist (Rspamd not installed?)` });
const signingConf = (cfg: HelperConfig): string => join(cfg.rspamdLocalDir, 'dkim_signing.conf');
const readText = (path: string): string => (existsSync(path) ? readFileSync(path, 'utf8') : '');

function rspamdGid(cfg: HelperConfig): number {
  try {
    const gid = groupId({ MAILSVC_RSPAMD_GROUP: cfg.rspamdGroup }, 'MAILSVC_RSPAMD_GROUP');
    if (gid === null) throw new Error('unset');
    return gid;
  } catch {
    throw new Error(`no group "${cfg.rspamdGroup}" on this host (MAILSVC_RSPAMD_GROUP: the group Rspamd runs as, Debian's _rspamd)`);
  }
}

/**
 * The key directory: a real directory (never a symlink), root-owned, 0750 with
 * Rspamd's group. No setgid bit: the helper's unit has RestrictSUIDSGID=yes,
 * under which mkdir or chmod with S_ISGID fails (EPERM), and every key file is
 * given the group explicitly anyway.
 */
async function keyDir(cfg: HelperConfig, gid: number): Promise<string> {
  const dir = dkimKeyDir(cfg.rspamdLocalDir);
  if (!existsSync(dir)) mkdirSync(dir, { mode: 0o750 });
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  if (process.getuid?.() === 0 && (st.uid !== 0 || st.gid !== gid)) await chown(dir, 0, gid);
  if ((st.mode & 0o7777) !== 0o750) await chmod(dir, 0o750);
  return dir;
}

/** A regular file at `path`, or null; anything else there (a symlink, a directory) is refused. */
function regularFile(path: string): { mode: number; uid: number; gid: number } | null {
  try {
    const st = lstatSync(path);
    if (!st.isFile()) throw new Error(`${path} is not a regular file`);
    return { mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * `dkim-key-install <domain> <selector> <alg> <key>`: writes the key file
 * `<key dir>/<domain>.<selector>.key` (0640, root and Rspamd's group,
 * temp file + rename). The same key again changes nothing; another key under
 * a selector Rspamd signs with now is refused.
 */
export async function installKey([domain = '', selector = '', alg = '', key = '']: readonly string[], cfg: HelperConfig): Promise<HelperResult> {
  if (!existsSync(cfg.rspamdLocalDir)) return skipped(cfg);
  const { content } = keyFileContent(alg as DkimKeyAlgorithm, Buffer.from(key, 'base64'));
  const gid = rspamdGid(cfg);
  await keyDir(cfg, gid);
  const path = dkimKeyPath(cfg.rspamdLocalDir, domain, selector);
  const before = regularFile(path);
  if (before) {
    const same = readFileSync(path, 'utf8') === content;
    if (same && before.mode === 0o640 && (process.getuid?.() !== 0 || (before.uid === 0 && before.gid === gid))) return answer({ ok: true, status: 'unchanged', selector, domain });
    if (!same && signingPaths(readText(signingConf(cfg))).has(path)) throw new Error(`selector ${selector} of ${domain} signs now: its key file is not replaced (rotate to a new selector)`);
  }
  const host = new LocalFileHost();
  const temp = await host.writeTemp(path, Buffer.from(content), 0o640, { uid: 0, gid });
  try {
    await host.rename(temp, path);
  } catch (err) {
    await host.remove(temp);
    throw err;
  }
  return answer({ ok: true, status: before ? 'changed' : 'created', selector, domain });
}

/** Whether Rspamd runs now (only then is it reloaded). */
async function rspamdRunning(): Promise<boolean> {
  const r = await exec('systemctl', ['is-active', '--quiet', 'rspamd.service'], { timeoutMs: 10_000, okCodes: [0, 1, 2, 3, 4] }).catch(() => null);
  return r?.code === 0;
}

/** A failed apply as the reply states it: stage and daemon; a checker's or daemon's output goes to the helper's log (failure.ts). */
const applyFailure = (r: Extract<ApplyResult, { ok: false }>, what: string, ctx: RunContext, action: string): HelperResult =>
  answer({ ok: false, status: 'failed', detail: publicApplyFailure(r, what, ctx.log, action) });

const commandReloader = (cmd: Command): DaemonReloader => ({
  reload: async () => void (await exec(cmd.file, cmd.args, { timeoutMs: cmd.timeoutMs ?? 30_000, maxOutputBytes: 1024 * 1024 })),
});

/**
 * `dkim-signing-apply <signing set>`: every key file must exist; then
 * dkim_signing.conf is rendered, checked with `rspamadm configtest` on a
 * staged copy, renamed, and Rspamd reloaded when it runs; restored on failure.
 */
export function applySigning(reload: (cfg: HelperConfig) => Command) {
  return async ([raw = '[]']: readonly string[], cfg: HelperConfig, ctx: RunContext): Promise<HelperResult> => {
    if (!existsSync(cfg.rspamdLocalDir)) return skipped(cfg);
    const set = JSON.parse(raw) as SigningSet;
    const domains = set.map((d) => ({ domain: d.domain, selectors: d.selectors.map((s) => ({ selector: s.selector, path: dkimKeyPath(cfg.rspamdLocalDir, d.domain, s.selector) })) }));
    for (const d of domains) {
      for (const s of d.selectors) if (!regularFile(s.path)) return answer({ ok: false, status: 'failed', detail: `no key file for selector ${s.selector} of ${d.domain}: install its key first (dkim-key-install)` });
    }
    const running = await rspamdRunning();
    const unit = { daemon: 'rspamd', files: [{ path: signingConf(cfg), content: renderDkimSigning(domains), mode: 0o644 }], checker: rspamdChecker(dirname(cfg.rspamdLocalDir)), reload: running };
    const r = await applyConfig([unit], new LocalFileHost(), commandReloader(reload(cfg)));
    if (!r.ok) return applyFailure(r, 'rspamd', ctx, 'dkim-signing-apply');
    const changed = r.changed.length + r.created.length > 0;
    const reloaded = r.reloaded.includes('rspamd');
    return answer({
      ok: true,
      status: changed ? 'changed' : 'unchanged',
      detail: changed ? (reloaded ? 'applied and reloaded' : 'applied (Rspamd not running: read at its next start)') : 'already up to date',
      reloaded,
    });
  };
}

/** `dkim-key-remove <domain> <selector>`: deletes a key file Rspamd no longer signs with; one still in dkim_signing.conf is refused. */
export async function removeKey([domain = '', selector = '']: readonly string[], cfg: HelperConfig): Promise<HelperResult> {
  if (!existsSync(cfg.rspamdLocalDir)) return skipped(cfg);
  const path = dkimKeyPath(cfg.rspamdLocalDir, domain, selector);
  if (signingPaths(readText(signingConf(cfg))).has(path)) throw new Error(`selector ${selector} of ${domain} is in Rspamd's signing configuration: switch signing away from it first`);
  if (!regularFile(path)) return answer({ ok: true, status: 'absent', domain, selector });
  rmSync(path);
  return answer({ ok: true, status: 'removed', domain, selector });
}

/**
 * `srs-domains-apply <domains>`: SRS_EXCLUDE_DOMAINS in postsrsd's settings
 * file (MAILSVC_POSTSRSD_DEFAULTS) set to the list, only when it differs;
 * `sh -n` checks it, rename, postsrsd restarted, restored on failure.
 */
export function applySrsDomains(restart: (cfg: HelperConfig) => Command) {
  return async ([list = '']: readonly string[], cfg: HelperConfig, ctx: RunContext): Promise<HelperResult> => {
    const file = cfg.postsrsdDefaults;
    const host = new LocalFileHost();
    const current = await host.read(file);
    if (!current) return answer({ ok: false, status: 'missing', detail: `${file} does not exist: install postsrsd (apt install postsrsd) or set MAILSVC_POSTSRSD_DEFAULTS in the helper's environment` });
    const text = current.content.toString('utf8');
    const domains = list === '' ? [] : list.split(',');
    if (readExcludeDomains(text)?.join(',') === domains.join(',')) return answer({ ok: true, status: 'unchanged', changed: false, restarted: false });
    const unit = { daemon: 'postsrsd', files: [{ path: file, content: setExcludeDomains(text, domains), mode: current.mode }], checker: postsrsdChecker(), reload: true };
    const r = await applyConfig([unit], host, commandReloader(restart(cfg)));
    if (!r.ok) return applyFailure(r, 'postsrsd', ctx, 'srs-domains-apply');
    return answer({ ok: true, status: 'changed', changed: true, restarted: r.reloaded.includes('postsrsd') });
  };
}
