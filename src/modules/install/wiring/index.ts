import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { applyConfig } from '../../../adapters/config-applier/index.js';
import type { RenderedFile, RunFn } from '../../../adapters/config-applier/index.js';
import { planDovecot } from './dovecot.js';
import { planFail2ban } from './fail2ban.js';
import { planNftables } from './nftables.js';
import { planNginx } from './nginx.js';
import { planPostfix } from './postfix.js';
import { planPostsrsd } from './postsrsd.js';
import { planRspamd } from './rspamd.js';
import { WIRED_DAEMONS } from './types.js';
import type { DaemonOutcome, DaemonPlan, WiredDaemon, WiringContext, WiringInput, WiringReport } from './types.js';

export { WIRED_DAEMONS } from './types.js';
export type * from './types.js';
export { localHostOps } from './host-ops.js';

/** The program that says a daemon is installed. */
export const PROGRAMS: Record<WiredDaemon, string> = { postfix: 'postconf', dovecot: 'doveconf', rspamd: 'rspamadm', nginx: 'nginx', fail2ban: 'fail2ban-client', postsrsd: 'postsrsd', nftables: 'nft' };

/** Whether `program` is on PATH or in the sbin directories root's PATH has. */
export function onPath(program: string, path = process.env.PATH ?? ''): boolean {
  return [...path.split(delimiter), '/usr/sbin', '/sbin', '/usr/bin', '/bin'].some((d) => d !== '' && existsSync(join(d, program)));
}

/** `diff -u` of a file's current text and its new one (empty when equal). */
async function unifiedDiff(exec: RunFn, f: RenderedFile): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-diff-'));
  try {
    const next = join(dir, 'new');
    writeFileSync(next, f.content);
    const old = existsSync(f.path) ? f.path : '/dev/null';
    const r = await exec('diff', ['-u', '--label', old === '/dev/null' ? '/dev/null' : f.path, '--label', f.path, old, next], { timeoutMs: 30_000, maxBytes: 4 * 1024 * 1024 });
    return r.code === 1 ? r.stdout : '';
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));

async function plan(ctx: WiringContext, d: WiredDaemon, active: ReadonlySet<WiredDaemon>): Promise<DaemonPlan> {
  switch (d) {
    case 'postfix':
      return planPostfix(ctx, active);
    case 'dovecot':
      return planDovecot(ctx);
    case 'rspamd':
      return planRspamd(ctx);
    case 'nginx':
      return planNginx(ctx);
    case 'fail2ban':
      return planFail2ban(ctx, active.has('nftables') || onPath('nft'));
    case 'postsrsd':
      return planPostsrsd(ctx, ctx.settings.srsDomain ?? '');
    case 'nftables':
      return planNftables(ctx);
  }
}

/**
 * Wires every installed mail daemon to mailsvc (docs/install.md, Wiring the
 * mail daemons): per daemon, host steps (users, groups, directories), its
 * files through the config applier (its checker, rename, reload, restore on
 * failure), units enabled, and the settings mailsvc needs for it. Idempotent:
 * a daemon whose files and steps are already so is reported "already wired".
 * With dryRun nothing is changed: each file's diff is reported instead.
 */
export async function wireDaemons(input: WiringInput): Promise<WiringReport> {
  const { ctx } = input;
  const installed = input.installed ?? ((d: WiredDaemon) => Promise.resolve(onPath(PROGRAMS[d])));
  const outcomes = new Map<WiredDaemon, DaemonOutcome>();
  const active = new Set<WiredDaemon>();
  for (const d of WIRED_DAEMONS) {
    const base = { daemon: d, changes: [], notes: [] };
    if (!(await installed(d))) outcomes.set(d, { ...base, status: 'not installed', notes: [`${PROGRAMS[d]} not found: install the package, then run mailsvc install again`] });
    else if (input.noWire.includes(d)) outcomes.set(d, { ...base, status: 'left alone', notes: ['--no-wire'] });
    else if (d === 'postsrsd' && !(ctx.settings.enableSrs && ctx.settings.srsDomain)) {
      outcomes.set(d, { ...base, status: 'left alone', notes: ['SRS is off: set MAILSVC_ENABLE_SRS=yes and MAILSVC_SRS_DOMAIN in the settings file, then run mailsvc install again'] });
    } else active.add(d);
  }
  const settingsNow = input.readSettings();
  for (const d of WIRED_DAEMONS.filter((x) => active.has(x))) {
    let p: DaemonPlan;
    try {
      p = await plan(ctx, d, active);
    } catch (e) {
      outcomes.set(d, { daemon: d, status: 'failed', changes: [], notes: [], detail: message(e) });
      continue;
    }
    const settings = Object.entries(p.settings).filter(([k, v]) => settingsNow[k] !== v);
    if (input.dryRun) {
      const diffs = (await Promise.all(p.files.map(async (f) => ({ path: f.path, diff: await unifiedDiff(ctx.exec, f) })))).filter((x) => x.diff !== '');
      const changes = [...diffs.map((x) => `${existsSync(x.path) ? 'change' : 'create'} ${x.path}`), ...settings.map(([k, v]) => `set ${k}=${v} in ${ctx.paths.settingsFile}`)];
      const steps = [...p.before, ...p.after].map((s) => `make sure of: ${s.what}`);
      outcomes.set(d, { daemon: d, status: changes.length ? 'would wire' : 'already wired', changes: [...changes, ...steps], diffs, notes: p.notes });
      continue;
    }
    const changes: string[] = [];
    try {
      for (const s of p.before) if (await s.run(input.host)) changes.push(s.what);
      const r = await applyConfig([{ daemon: d, files: p.files, checker: p.checker, reload: true }], input.files, input.reloader);
      if (!r.ok) {
        const restored = r.restoreErrors.length ? `; NOT restored: ${r.restoreErrors.join('; ')}` : '; its files are as they were';
        outcomes.set(d, { daemon: d, status: 'failed', changes, notes: p.notes, detail: `${r.detail}${restored}` });
        continue;
      }
      changes.push(...r.created.map((f) => `created ${f}`), ...r.changed.map((f) => `changed ${f}`), ...r.reloaded.map((x) => `reloaded ${x}`));
      for (const s of p.after) if (await s.run(input.host)) changes.push(s.what);
      for (const [k, v] of settings) {
        input.writeSetting(k, v);
        changes.push(`${k}=${v} in ${ctx.paths.settingsFile}`);
      }
    } catch (e) {
      outcomes.set(d, { daemon: d, status: 'failed', changes, notes: p.notes, detail: message(e) });
      continue;
    }
    outcomes.set(d, { daemon: d, status: changes.length ? 'wired' : 'already wired', changes, notes: p.notes });
  }
  return { dryRun: input.dryRun, daemons: WIRED_DAEMONS.map((d) => outcomes.get(d) as DaemonOutcome) };
}

/** The report as lines for the terminal. */
export function describeWiring(r: WiringReport): string[] {
  const lines: string[] = [];
  for (const o of r.daemons) {
    lines.push(`${o.daemon}: ${o.status}${o.detail ? ` — ${o.detail}` : ''}`);
    for (const c of o.changes) lines.push(`  ${c}`);
    for (const n of o.notes) lines.push(`  note: ${n}`);
    for (const d of o.diffs ?? []) lines.push(...d.diff.trimEnd().split('\n').map((l) => `    ${l}`));
  }
  return lines;
}
