import { existsSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { LocalFileHost, applyConfig, dovecotChecker, fail2banChecker, postfixChecker, rspamdChecker } from '../config-applier/index.js';
import type { ApplyFailure, ApplyUnit, ConfigChecker, ConfigFileHost, DaemonReloader, RenderedFile } from '../config-applier/index.js';
import type { LimitValues } from '../../shared/limit-keys.js';
import type { DaemonState } from './daemon-state.js';
import { renderDovecot, renderMainCf, renderRspamd } from './render.js';
import { renderJailPlan } from './jail-plan.js';
import type { JailPlanInput } from './jail-plan.js';
import type { RspamdFiles } from './render.js';

export type DaemonOutcome = { daemon: string; status: 'changed' | 'unchanged' | 'skipped'; detail: string; reloaded: boolean };
export type ApplyReport = { daemons: DaemonOutcome[]; changed: string[]; created: string[]; milliseconds: number };
/**
 * What `limits apply` did: the report, or why nothing changed (every file
 * restored, or what could not be). `failure` is the applier's own account,
 * checkers' output included: the helper logs it and sends a fixed sentence.
 */
export type LimitsApplyOutcome = { ok: true; report: ApplyReport } | { ok: false; detail: string; failure?: ApplyFailure };

type Daemon = 'postfix' | 'rspamd' | 'dovecot' | 'fail2ban';
export type Checkers = Record<Daemon, (dir: string) => ConfigChecker>;
const REAL_CHECKERS: Checkers = { postfix: (d) => postfixChecker(d), rspamd: (d) => rspamdChecker(d), dovecot: (f) => dovecotChecker(f), fail2ban: (d) => fail2banChecker(d) };

const modeOf = (path: string, dflt: number): number => (existsSync(path) ? statSync(path).mode & 0o7777 : dflt);
const file = (path: string, content: string): RenderedFile => ({ path, content, mode: modeOf(path, 0o644) });
const readOr = async (host: ConfigFileHost, path: string): Promise<string> => (await host.read(path))?.content.toString('utf8') ?? '';

/**
 * `limits apply`: renders Postfix, Rspamd, Dovecot and fail2ban, checks each with its
 * own checker, renames into place, reloads the daemons that run; any failure
 * restores every file (the config applier). A daemon whose configuration
 * location does not exist is skipped.
 */
export class LimitsApplier {
  constructor(
    private readonly state: DaemonState,
    private readonly reloader: DaemonReloader,
    private readonly jails: Omit<JailPlanInput, 'fail2banDir'>,
    private readonly host: ConfigFileHost = new LocalFileHost(),
    private readonly checkers: Checkers = REAL_CHECKERS,
  ) {}

  private async units(values: LimitValues, skipped: DaemonOutcome[]): Promise<ApplyUnit[]> {
    const { postfixDir, rspamdLocalDir, dovecotConfig, fail2banDir } = this.state.paths;
    const units: ApplyUnit[] = [];
    const unit = async (daemon: Daemon, dir: string, files: RenderedFile[]): Promise<void> => {
      units.push({ daemon, files, checker: this.checkers[daemon](dir), reload: await this.state.running(daemon) });
    };

    const mainCf = join(postfixDir, 'main.cf');
    if (existsSync(mainCf)) {
      const text = renderMainCf(await readOr(this.host, mainCf), values, await this.state.postfixMailboxLimits());
      await unit('postfix', postfixDir, [file(mainCf, text)]);
    } else skipped.push({ daemon: 'postfix', status: 'skipped', detail: `${mainCf} does not exist`, reloaded: false });

    if (existsSync(rspamdLocalDir)) {
      const names = ['options.inc', 'actions.conf', 'greylist.conf'] as const;
      const current = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await readOr(this.host, join(rspamdLocalDir, n))]))) as RspamdFiles;
      const next = renderRspamd(current, values);
      await unit('rspamd', dirname(rspamdLocalDir), names.map((n) => file(join(rspamdLocalDir, n), next[n])));
    } else skipped.push({ daemon: 'rspamd', status: 'skipped', detail: `${rspamdLocalDir} does not exist`, reloaded: false });

    const dovecotConfD = join(dirname(dovecotConfig), 'conf.d');
    if (existsSync(dovecotConfig) && existsSync(dovecotConfD)) {
      await unit('dovecot', dovecotConfig, [file(join(dovecotConfD, '99-mailsvc-limits.conf'), renderDovecot(values))]);
    } else skipped.push({ daemon: 'dovecot', status: 'skipped', detail: `${dovecotConfD} does not exist`, reloaded: false });

    const jailDir = join(fail2banDir, 'jail.d');
    if (existsSync(jailDir)) {
      const jails = renderJailPlan(values, { ...this.jails, fail2banDir }).map((f) => file(f.path, String(f.content)));
      await unit('fail2ban', fail2banDir, jails);
    } else skipped.push({ daemon: 'fail2ban', status: 'skipped', detail: `${jailDir} does not exist`, reloaded: false });
    return units;
  }

  async apply(values: LimitValues): Promise<LimitsApplyOutcome> {
    const started = Date.now();
    const skipped: DaemonOutcome[] = [];
    const units = await this.units(values, skipped);
    const r = await applyConfig(units, this.host, this.reloader);
    if (!r.ok) {
      const restore = r.restoreErrors.length ? ` Restoring failed for: ${r.restoreErrors.join('; ')}` : ' Every file was restored.';
      return { ok: false, detail: `limits apply: ${r.stage} of ${r.daemon} failed: ${r.detail}.${restore}`, failure: r };
    }
    const touched = new Set([...r.changed, ...r.created]);
    const daemons: DaemonOutcome[] = units.map((u) => {
      const changed = u.files.some((f) => touched.has(f.path));
      const reloaded = r.reloaded.includes(u.daemon);
      const detail = changed ? (reloaded ? 'applied and reloaded' : u.reload ? 'applied' : 'applied (not running: read at its next start)') : 'already up to date';
      return { daemon: u.daemon, status: changed ? 'changed' : 'unchanged', detail, reloaded };
    });
    return { ok: true, report: { daemons: [...daemons, ...skipped], changed: r.changed, created: r.created, milliseconds: Date.now() - started } };
  }
}
