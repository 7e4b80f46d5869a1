import { chownSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, renameSync, rmSync, symlinkSync, chmodSync } from 'node:fs';
import { delimiter, dirname, join, relative, sep } from 'node:path';
import { planConfigRestore } from './allow-list.js';
import type { ConfigPlan, RecordedPaths } from './allow-list.js';
import { LocalFileHost, applyConfig, commandReloader, dovecotChecker, fail2banChecker, postfixChecker, rspamdChecker } from '../../adapters/config-applier/index.js';
import type { ApplyUnit, ConfigChecker, RenderedFile } from '../../adapters/config-applier/index.js';
import { DaemonState, limitsPaths } from '../../adapters/limits-config/index.js';
import { extractPlainArchive, listTar } from '../../adapters/tar/index.js';
import type { Settings } from '../../config/settings.js';
import { AppError } from '../../shared/errors.js';

type Daemon = 'postfix' | 'dovecot' | 'rspamd' | 'fail2ban';

const NO_CHECK: ConfigChecker = { name: 'none (not a daemon file)', check: () => Promise.resolve({ ok: true }) };

const inside = (path: string, dir: string): boolean => path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);

function onPath(program: string): boolean {
  if (program.includes('/')) return existsSync(program);
  return (process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin').split(delimiter).some((d) => d !== '' && existsSync(join(d, program)));
}

/** Every path of the staged tree (relative), to hold it against the checked listing. */
function staged(root: string): { dirs: Set<string>; other: string[] } {
  const out = { dirs: new Set<string>(), other: [] as string[] };
  const visit = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      const rel = relative(root, p);
      if (lstatSync(p).isDirectory()) {
        out.dirs.add(rel);
        visit(p);
      } else out.other.push(rel);
    }
  };
  visit(root);
  return out;
}

/** The checked plan of a config.tar: its listing judged against the allow-list before anything is extracted. */
export function checkConfigArchive(settings: Settings, tarFile: string, recorded: RecordedPaths): ConfigPlan {
  let members;
  try {
    members = listTar(tarFile);
  } catch (err) {
    throw new AppError('validation', `refusing to restore, nothing was changed: config.tar cannot be read (${err instanceof Error ? err.message : String(err)})`);
  }
  return planConfigRestore(settings, members, recorded);
}

/**
 * Puts the configuration a backup holds (`config.tar`) back where it was
 * taken from: the mailsvc settings file and key file, DKIM keys, the daemon
 * files, TLS material. Each file keeps its recorded mode and owner and is
 * placed atomically (temp file in the same directory, rename) by the config
 * applier; the files of Postfix, Dovecot, Rspamd and fail2ban are first
 * judged by the daemon's own checker on a staged copy of its whole
 * configuration, and a daemon that runs is reloaded. Any refusal or failed
 * reload puts every file back as it was: no daemon is left on a broken
 * configuration. A daemon whose checker is not installed is not installed:
 * its files are put back unchecked, and the report says so. Missing
 * directories are made with their recorded mode and owner first (they stay,
 * empty, if the apply is refused). Runs as root, in this process: the helper
 * never writes content a caller sends.
 */
export async function restoreConfig(settings: Settings, tarFile: string, staging: string, recorded: RecordedPaths): Promise<string[]> {
  if (process.getuid?.() !== 0) throw new AppError('forbidden', 'restoring the configuration puts files back with their owners: run mailsvc restore as root');
  const plan = checkConfigArchive(settings, tarFile, recorded);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true, mode: 0o700 });
  const steps: string[] = [];
  try {
    await extractPlainArchive({ file: tarFile, dir: staging });
    // What tar made must be what the listing said (tar makes the parents of a member by itself: directories only).
    const got = staged(staging);
    const listed = new Set([...plan.files, ...plan.links].map((e) => e.member));
    const extra = got.other.filter((rel) => !listed.has(rel));
    if (extra.length > 0 || [...listed].some((rel) => !got.other.includes(rel))) {
      throw new AppError('validation', `refusing to restore, nothing was changed: config.tar extracts to other entries than its listing shows (${[...extra, ...[...listed].filter((rel) => !got.other.includes(rel))].slice(0, 5).map((x) => JSON.stringify(x)).join(', ')})`);
    }
    const tree = plan;
    const h = settings.helper;
    const dovecotConfig = h.dovecotConfig ?? '/etc/dovecot/dovecot.conf';
    const daemons: { daemon: Daemon; dir: string; program: string; checker: () => ConfigChecker }[] = [
      { daemon: 'postfix', dir: h.postfixConfigDir, program: 'postfix', checker: () => postfixChecker(h.postfixConfigDir) },
      { daemon: 'dovecot', dir: dirname(dovecotConfig), program: 'doveconf', checker: () => dovecotChecker(dovecotConfig) },
      { daemon: 'rspamd', dir: h.rspamdLocalDir, program: 'rspamadm', checker: () => rspamdChecker(dirname(h.rspamdLocalDir)) },
      { daemon: 'fail2ban', dir: h.fail2banConfigDir, program: 'fail2ban-client', checker: () => fail2banChecker(h.fail2banConfigDir) },
    ];
    // Directories first (a fresh host has none of them), with the recorded mode and owner.
    const made: string[] = [];
    for (const d of tree.dirs) {
      if (existsSync(d.target)) continue;
      // A missing parent of a daemon directory (a fresh host): root's, 0755, as the package would make it.
      mkdirSync(dirname(d.target), { recursive: true, mode: 0o755 });
      mkdirSync(d.target, { mode: 0o700 });
      chownSync(d.target, d.uid, d.gid);
      chmodSync(d.target, d.mode);
      made.push(d.target);
    }
    if (made.length > 0) steps.push(`config: made ${made.length} missing director${made.length === 1 ? 'y' : 'ies'}`);
    const state = new DaemonState(limitsPaths(h));
    const units: ApplyUnit[] = [];
    const other: RenderedFile[] = [];
    const byDaemon = new Map<Daemon, RenderedFile[]>();
    for (const f of tree.files) {
      const file: RenderedFile = { path: f.target, content: readFileSync(join(staging, f.member)), mode: f.mode, owner: { uid: f.uid, gid: f.gid } };
      if (!existsSync(dirname(f.target))) mkdirSync(dirname(f.target), { recursive: true, mode: f.daemonDir ? 0o755 : 0o750 });
      const d = daemons.find((x) => inside(f.target, x.dir));
      if (d) byDaemon.set(d.daemon, [...(byDaemon.get(d.daemon) ?? []), file]);
      else other.push(file);
    }
    for (const d of daemons) {
      const files = byDaemon.get(d.daemon);
      if (!files) continue;
      if (!onPath(d.program)) {
        steps.push(`config: ${d.daemon} is not installed (no ${d.program}): its ${files.length} file(s) put back unchecked`);
        units.push({ daemon: d.daemon, files, checker: NO_CHECK, reload: false });
      } else units.push({ daemon: d.daemon, files, checker: d.checker(), reload: await state.running(d.daemon) });
    }
    if (other.length > 0) units.push({ daemon: 'mailsvc', files: other, checker: NO_CHECK, reload: false });
    const reloader = commandReloader({
      postfix: ['postfix', '-c', h.postfixConfigDir, 'reload'],
      dovecot: [h.doveadm, ...(h.dovecotConfig ? ['-c', h.dovecotConfig] : []), 'reload'],
      fail2ban: ['fail2ban-client', '-c', h.fail2banConfigDir, '-s', h.fail2banSocket, 'reload'],
      rspamd: ['systemctl', 'reload', 'rspamd.service'],
    });
    const r = await applyConfig(units, new LocalFileHost(), reloader);
    if (!r.ok) {
      const restored = r.restoreErrors.length > 0 ? ` Restoring the previous files failed for: ${r.restoreErrors.join('; ')}` : ' Every file is as it was before.';
      throw new AppError('validation', `refusing to restore, the configuration was not changed: ${r.stage} of ${r.daemon} failed: ${r.detail}.${restored}`);
    }
    // Symbolic links (TLS material: live/ points into archive/), placed by rename too.
    let links = 0;
    for (const l of tree.links) {
      const cur = existsSync(l.target) || isLink(l.target) ? (isLink(l.target) ? readlinkSync(l.target) : null) : undefined;
      if (cur === l.to) continue;
      if (cur === null) continue; // a real file or directory there: never replaced by a link
      const temp = join(dirname(l.target), `.${l.member.split('/').pop() ?? 'link'}.mailsvc-restore`);
      rmSync(temp, { force: true });
      symlinkSync(l.to, temp);
      renameSync(temp, l.target);
      links++;
    }
    steps.push(`config: ${r.changed.length} file(s) replaced, ${r.created.length} created, ${r.unchanged.length} already equal${links ? `, ${links} link(s)` : ''}; checked: ${units.filter((u) => u.checker !== NO_CHECK).map((u) => u.daemon).join(', ') || 'no daemon files'}; reloaded: ${r.reloaded.join(', ') || 'none'}`);
    return steps;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}
