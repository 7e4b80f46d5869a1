import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { chmod, chown } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { exec } from '../adapters/exec.js';
import type { HelperResult } from '../adapters/helper-client.js';
import { LocalFileHost, applyConfig, dovecotChecker, nginxChecker, postfixChecker } from '../adapters/config-applier/index.js';
import type { ApplyUnit, DaemonReloader, RenderedFile } from '../adapters/config-applier/index.js';
import { DaemonState, limitsPaths } from '../adapters/limits-config/index.js';
import { setMainCfParams } from '../adapters/limits-config/render.js';
import { groupId } from '../config/mail-settings.js';
import { parseTlsBundle, pem } from '../shared/tls-bundle.js';
import type { Command, HelperConfig, RunContext } from './action-types.js';
import { publicApplyFailure } from './failure.js';
import type { TlsDaemon } from './tls-param.js';

/**
 * The helper's certificate work (docs/tls.md): `tls-deploy` writes a chain
 * and key under MAILSVC_TLS_DIR/<name>/ as versioned files (the leaf's
 * SHA-256 names them, so the previous pair stays on disk), then points
 * Postfix, Dovecot and nginx at them through the config applier (checker,
 * rename, reload, every file restored on failure); `tls-rollback` points
 * them back where they pointed before the last deploy. The files are rendered
 * here from a parsed chain and key, never from text a caller sends.
 */

type Before = Partial<Record<TlsDaemon, string | null>>;
/** What the helper keeps in <name>/state.json (root's; no secret in it). */
type State = { current: { sha256: string; daemons: TlsDaemon[] } | null; previous: string | null; before: Before | null };

const POSTFIX_PARAM = 'smtpd_tls_chain_files';
const answer = (value: Record<string, unknown>): HelperResult => ({ code: 0, stdout: JSON.stringify(value), stderr: '' });

export const certDir = (cfg: HelperConfig, name: string): string => join(cfg.tlsDir, name);
const stem = (sha: string): string => sha.slice(0, 16);
export const chainPath = (cfg: HelperConfig, name: string, sha: string): string => join(certDir(cfg, name), `${stem(sha)}.chain.pem`);
export const keyPath = (cfg: HelperConfig, name: string, sha: string): string => join(certDir(cfg, name), `${stem(sha)}.key.pem`);
const statePath = (cfg: HelperConfig, name: string): string => join(certDir(cfg, name), 'state.json');

const mainCf = (cfg: HelperConfig): string => join(cfg.postfixConfigDir, 'main.cf');
const dovecotMain = (cfg: HelperConfig): string => cfg.dovecotConfig ?? '/etc/dovecot/dovecot.conf';
/** After Debian's 10-ssl.conf in the `conf.d/*.conf` include order: its ssl_cert/ssl_key win. */
export const dovecotTlsFile = (cfg: HelperConfig): string => join(dirname(dovecotMain(cfg)), 'conf.d', '90-mailsvc-tls.conf');

const readText = (path: string): string | null => (existsSync(path) ? readFileSync(path, 'utf8') : null);

function tlsGid(cfg: HelperConfig): number {
  try {
    const gid = groupId({ MAILSVC_TLS_GROUP: cfg.tlsGroup }, 'MAILSVC_TLS_GROUP');
    if (gid === null) throw new Error('unset');
    return gid;
  } catch {
    throw new Error(`no group "${cfg.tlsGroup}" on this host (MAILSVC_TLS_GROUP: the group that may read the private keys, Debian's ssl-cert)`);
  }
}

/** A real directory (never a symlink), root-owned, with `mode` and `gid`; made when missing. */
async function ownDir(path: string, mode: number, gid: number): Promise<void> {
  if (!existsSync(path)) mkdirSync(path, { mode, recursive: false });
  const st = lstatSync(path);
  if (!st.isDirectory()) throw new Error(`${path} is not a directory`);
  if (process.getuid?.() === 0 && (st.uid !== 0 || st.gid !== gid)) await chown(path, 0, gid);
  if ((st.mode & 0o7777) !== mode) await chmod(path, mode);
}

/** Where each daemon's configuration is, and whether it is there at all (an absent daemon is skipped). */
function present(daemon: TlsDaemon, cfg: HelperConfig): string | null {
  if (daemon === 'postfix') return existsSync(mainCf(cfg)) ? null : `${mainCf(cfg)} does not exist (Postfix not installed?)`;
  if (daemon === 'dovecot') return existsSync(dirname(dovecotTlsFile(cfg))) ? null : `${dirname(dovecotTlsFile(cfg))} does not exist (Dovecot not installed?)`;
  if (!existsSync(cfg.nginxConfig)) return `${cfg.nginxConfig} does not exist (nginx not installed?)`;
  return existsSync(dirname(cfg.nginxTlsSnippet)) ? null : `${dirname(cfg.nginxTlsSnippet)} does not exist`;
}

/** nginx runs when the process in its pid file (the `pid` of nginx.conf, else Debian's /run/nginx.pid) is alive. */
function nginxRunning(cfg: HelperConfig): boolean {
  const conf = readText(cfg.nginxConfig) ?? '';
  const pidFile = /^\s*pid\s+([^;\s]+)\s*;/m.exec(conf)?.[1] ?? '/run/nginx.pid';
  const pid = Number((readText(pidFile) ?? '').trim());
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function running(daemon: TlsDaemon, cfg: HelperConfig): Promise<boolean> {
  if (daemon === 'nginx') return nginxRunning(cfg);
  return new DaemonState(limitsPaths(cfg)).running(daemon);
}

/** main.cf's `smtpd_tls_chain_files` as written (null: not set). */
function postfixValue(text: string): string | null {
  const lines = text.split('\n');
  const i = lines.findIndex((l) => new RegExp(`^${POSTFIX_PARAM}\\s*=`).test(l));
  if (i < 0) return null;
  let value = (lines[i] ?? '').replace(new RegExp(`^${POSTFIX_PARAM}\\s*=\\s*`), '');
  for (let j = i + 1; j < lines.length && /^\s+\S/.test(lines[j] ?? '') && !/^\s*#/.test(lines[j] ?? ''); j++) value += ` ${(lines[j] ?? '').trim()}`;
  return value.trim();
}

/** main.cf without `smtpd_tls_chain_files` (and its continuation lines). */
function removeMainCfParam(text: string): string {
  const lines = text.replace(/\n$/, '').split('\n');
  const i = lines.findIndex((l) => new RegExp(`^${POSTFIX_PARAM}\\s*=`).test(l));
  if (i < 0) return text;
  let end = i + 1;
  while (end < lines.length && /^\s+\S/.test(lines[end] ?? '') && !/^\s*#/.test(lines[end] ?? '')) end++;
  lines.splice(i, end - i);
  return `${lines.join('\n')}\n`;
}

const dovecotText = (name: string, chain: string, key: string): string =>
  `# Written by mailsvc (tls-deploy): the certificate "${name}". Do not edit: the next deploy replaces it.\nssl_cert = <${chain}\nssl_key = <${key}\n`;
const nginxText = (name: string, chain: string, key: string): string =>
  `# Written by mailsvc (tls-deploy): the certificate "${name}". Included by mailsvc's site; the next deploy replaces it.\nssl_certificate ${chain};\nssl_certificate_key ${key};\n`;
const EMPTY = '# Written by mailsvc: no certificate deployed by mailsvc here (rolled back to the state before its first deploy).\n';

const modeOf = (path: string, dflt: number): number => (existsSync(path) ? lstatSync(path).mode & 0o7777 : dflt);

/** The file a daemon reads, as it is now (to put back on rollback). */
function current(daemon: TlsDaemon, cfg: HelperConfig): string | null {
  if (daemon === 'postfix') return postfixValue(readText(mainCf(cfg)) ?? '');
  return readText(daemon === 'dovecot' ? dovecotTlsFile(cfg) : cfg.nginxTlsSnippet);
}

/** The rendered file that points `daemon` at `chain`/`key`, or (value given) puts back what was there. */
function render(daemon: TlsDaemon, cfg: HelperConfig, to: { name: string; chain: string; key: string } | { restore: string | null }): RenderedFile {
  if (daemon === 'postfix') {
    const text = readText(mainCf(cfg)) ?? '';
    const next = 'restore' in to
      ? (to.restore === null ? removeMainCfParam(text) : setMainCfParams(text, { [POSTFIX_PARAM]: to.restore }))
      : setMainCfParams(text, { [POSTFIX_PARAM]: `${to.key}, ${to.chain}` });
    return { path: mainCf(cfg), content: next, mode: modeOf(mainCf(cfg), 0o644) };
  }
  const path = daemon === 'dovecot' ? dovecotTlsFile(cfg) : cfg.nginxTlsSnippet;
  const content = 'restore' in to ? (to.restore ?? EMPTY) : (daemon === 'dovecot' ? dovecotText : nginxText)(to.name, to.chain, to.key);
  return { path, content, mode: 0o644 };
}

function unit(daemon: TlsDaemon, cfg: HelperConfig, file: RenderedFile, reload: boolean): ApplyUnit {
  const checker = daemon === 'postfix' ? postfixChecker(cfg.postfixConfigDir) : daemon === 'dovecot' ? dovecotChecker(dovecotMain(cfg)) : nginxChecker(cfg.nginxConfig);
  return { daemon, files: [file], checker, reload };
}

function readState(cfg: HelperConfig, name: string): State {
  const text = readText(statePath(cfg, name));
  if (text === null) return { current: null, previous: null, before: null };
  try {
    return JSON.parse(text) as State;
  } catch {
    throw new Error(`${statePath(cfg, name)} is not readable JSON: move it away to start over`);
  }
}

async function writeFile(host: LocalFileHost, path: string, content: string, mode: number, gid: number): Promise<void> {
  const before = host.read(path);
  const now = await before;
  if (now && now.content.toString('utf8') === content && now.mode === mode && (process.getuid?.() !== 0 || (now.uid === 0 && now.gid === gid))) return;
  const temp = await host.writeTemp(path, Buffer.from(content), mode, { uid: 0, gid });
  try {
    await host.rename(temp, path);
  } catch (err) {
    await host.remove(temp);
    throw err;
  }
}

/** Removes versioned files of neither `keep` certificate (the one serving and the one to roll back to). */
function prune(cfg: HelperConfig, name: string, keep: readonly (string | null)[]): void {
  const stems = new Set(keep.filter((k): k is string => k !== null).map(stem));
  for (const f of readdirSync(certDir(cfg, name))) {
    const m = /^([0-9a-f]{16})\.(chain|key)\.pem$/.exec(f);
    if (m && !stems.has(m[1] ?? '')) rmSync(join(certDir(cfg, name), f), { force: true });
  }
}

export type TlsReloads = (daemon: TlsDaemon, cfg: HelperConfig) => Command;

const reloader = (reload: TlsReloads, cfg: HelperConfig): DaemonReloader => ({
  reload: async (daemon) => {
    const cmd = reload(daemon as TlsDaemon, cfg);
    await exec(cmd.file, cmd.args, { timeoutMs: cmd.timeoutMs ?? 60_000, maxOutputBytes: 1024 * 1024 });
  },
});

type DaemonReport = { daemon: TlsDaemon; status: 'changed' | 'unchanged' | 'skipped'; reloaded: boolean; detail: string };

/** Applies one file per daemon; the report per daemon, or the failure as a reply states it. */
async function apply(daemons: readonly TlsDaemon[], cfg: HelperConfig, ctx: RunContext, action: string, fileOf: (d: TlsDaemon) => RenderedFile, reload: TlsReloads): Promise<{ ok: true; report: DaemonReport[] } | { ok: false; detail: string }> {
  const report: DaemonReport[] = [];
  const units: ApplyUnit[] = [];
  for (const d of daemons) {
    const absent = present(d, cfg);
    if (absent) report.push({ daemon: d, status: 'skipped', reloaded: false, detail: absent });
    else units.push(unit(d, cfg, fileOf(d), await running(d, cfg)));
  }
  const r = await applyConfig(units, new LocalFileHost(), reloader(reload, cfg));
  if (!r.ok) return { ok: false, detail: publicApplyFailure(r, r.daemon, ctx.log, action) };
  const touched = new Set([...r.changed, ...r.created]);
  for (const u of units) {
    const changed = u.files.some((f) => touched.has(f.path));
    const reloaded = r.reloaded.includes(u.daemon);
    report.push({ daemon: u.daemon as TlsDaemon, status: changed ? 'changed' : 'unchanged', reloaded, detail: changed ? (reloaded ? 'applied and reloaded' : 'applied (not running: read at its next start)') : 'already points at it' });
  }
  return { ok: true, report: report.sort((a, b) => daemons.indexOf(a.daemon) - daemons.indexOf(b.daemon)) };
}

/**
 * `tls-deploy <name> <daemons> <bundle>`: the chain (0644) and key (0640),
 * both root:MAILSVC_TLS_GROUP, as `<sha>.chain.pem` / `<sha>.key.pem` in
 * MAILSVC_TLS_DIR/<name>/ (0750 root:that group); then each daemon present
 * is pointed at them, checked and reloaded (all or nothing). The certificate
 * that served before stays on disk and in state.json, for `tls-rollback`.
 */
export function deployCertificate(reload: TlsReloads) {
  return async ([name = '', list = '', raw = '{}']: readonly string[], cfg: HelperConfig, ctx: RunContext): Promise<HelperResult> => {
    const bundle = parseTlsBundle(JSON.parse(raw) as unknown, Date.now());
    const gid = tlsGid(cfg);
    await ownDir(cfg.tlsDir, 0o755, 0);
    await ownDir(certDir(cfg, name), 0o750, gid);
    const host = new LocalFileHost();
    const chain = chainPath(cfg, name, bundle.sha256);
    const key = keyPath(cfg, name, bundle.sha256);
    await writeFile(host, chain, bundle.chain.map((c) => pem('CERTIFICATE', c.raw)).join(''), 0o644, gid);
    await writeFile(host, key, pem('PRIVATE KEY', bundle.key.export({ type: 'pkcs8', format: 'der' })), 0o640, gid);
    const daemons = list.split(',') as TlsDaemon[];
    const state = readState(cfg, name);
    const before: Before = Object.fromEntries(daemons.map((d) => [d, current(d, cfg)]));
    const r = await apply(daemons, cfg, ctx, 'tls-deploy', (d) => render(d, cfg, { name, chain, key }), reload);
    if (!r.ok) return answer({ ok: false, status: 'failed', sha256: bundle.sha256, detail: r.detail });
    const deployed = r.report.filter((x) => x.status !== 'skipped').map((x) => x.daemon);
    const same = state.current?.sha256 === bundle.sha256;
    const next: State = same
      ? { current: { sha256: bundle.sha256, daemons: [...new Set([...(state.current?.daemons ?? []), ...deployed])] }, previous: state.previous, before: { ...before, ...(state.before ?? {}) } }
      : { current: { sha256: bundle.sha256, daemons: deployed }, previous: state.current?.sha256 ?? null, before };
    await writeFile(host, statePath(cfg, name), `${JSON.stringify(next)}\n`, 0o644, 0);
    prune(cfg, name, [next.current?.sha256 ?? null, next.previous]);
    return answer({ ok: true, status: r.report.some((x) => x.status === 'changed') ? 'changed' : 'unchanged', sha256: bundle.sha256, previous: next.previous, daemons: r.report });
  };
}

/**
 * `tls-rollback <name>`: each daemon the last deploy of `name` pointed is
 * pointed back where it pointed before (the previous certificate's files,
 * still on disk, or the administrator's own setting), checked and reloaded.
 */
export function rollbackCertificate(reload: TlsReloads) {
  return async ([name = '']: readonly string[], cfg: HelperConfig, ctx: RunContext): Promise<HelperResult> => {
    const state = readState(cfg, name);
    if (!state.before || !state.current) return answer({ ok: false, status: 'nothing', detail: `no deploy of ${name} to roll back` });
    const before = state.before;
    const daemons = (Object.keys(before) as TlsDaemon[]).filter((d) => state.current?.daemons.includes(d));
    const r = await apply(daemons, cfg, ctx, 'tls-rollback', (d) => render(d, cfg, { restore: before[d] ?? null }), reload);
    if (!r.ok) return answer({ ok: false, status: 'failed', detail: r.detail });
    const next: State = { current: state.previous ? { sha256: state.previous, daemons } : null, previous: null, before: null };
    await writeFile(new LocalFileHost(), statePath(cfg, name), `${JSON.stringify(next)}\n`, 0o644, 0);
    return answer({ ok: true, status: 'rolled-back', sha256: state.previous, from: state.current.sha256, daemons: r.report });
  };
}
