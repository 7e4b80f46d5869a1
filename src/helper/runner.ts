import type { Logger } from 'pino';
import { ExecError, exec } from '../adapters/exec.js';
import { ACTIONS } from './actions.js';
import type { ActionSpec, HelperConfig } from './actions.js';
import { HelperError } from '../adapters/helper-client.js';
import type { HelperClient, HelperResult } from '../adapters/helper-client.js';
import { MAX_ARG_LENGTH } from './protocol.js';
import type { HelperAnswer } from './protocol.js';
import { ActionFailed, logExecOutput, publicExecDetail } from './failure.js';
import { notInstalled } from '../shared/daemon-hints.js';

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;
/** An answer before the server adds the request's id. */
export type Outcome = WithoutId<HelperAnswer>;

/** How long a `run` action may take unless it says otherwise (ActionSpec.deadlineMs). */
export const RUN_DEADLINE_MS = 5 * 60_000;

const clip = (s: string): string => (s.length > 200 ? `${s.slice(0, 200)}…` : s);
const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * Validates an action and its arguments against the fixed table, runs the
 * program through `exec` (no shell, minimal environment, timeout, output cap)
 * and logs every call: action, arguments (secret ones redacted), result and
 * duration. A refused call runs nothing. A failed program's output goes to
 * this log only: a reply says which program failed and how (exit code,
 * signal), never what it printed, which may quote a file it read.
 */
export class HelperRunner {
  constructor(
    private readonly cfg: HelperConfig,
    private readonly log: Logger,
    private readonly actions: ReadonlyMap<string, ActionSpec> = ACTIONS,
  ) {}

  /** The longest argument `action` takes (the protocol refuses longer ones before anything runs). */
  maxArgLength(action: string): number {
    return this.actions.get(action)?.maxArgLength ?? MAX_ARG_LENGTH;
  }

  async answer(action: string, rawArgs: readonly string[]): Promise<Outcome> {
    const started = Date.now();
    const spec = this.actions.get(action);
    const shown = rawArgs.map((a, i) => (spec?.params[i]?.secret ? '[redacted]' : clip(a)));
    const done = (outcome: Outcome): Outcome => {
      const summary = outcome.ok ? { ok: true, code: outcome.code } : { ok: false, error: outcome.error, detail: outcome.detail, exec: outcome.exec };
      const entry = { helper: { action: clip(action), args: shown, ...summary, duration_ms: Date.now() - started } };
      if (outcome.ok) this.log.info(entry, 'helper call');
      // A daemon that is not installed or not running is the caller's to report (503 / exit 69 with
      // what to do): info here, so a CLI command at its default level prints no JSON line beside it.
      else if (outcome.error === 'unavailable') this.log.info(entry, 'helper call failed');
      else this.log.warn(entry, 'helper call failed');
      return outcome;
    };
    if (!spec) return done({ ok: false, error: 'unknown-action', detail: `"${clip(action)}" is not a helper action (known: ${[...this.actions.keys()].join(', ')})` });
    if (rawArgs.length !== spec.params.length) {
      return done({ ok: false, error: 'invalid-argument', detail: `${action} takes ${spec.params.map((p) => `<${p.name}>`).join(' ') || 'no arguments'}` });
    }
    const limit = spec.maxArgLength ?? MAX_ARG_LENGTH;
    if (rawArgs.some((a) => a.length > limit)) return done({ ok: false, error: 'invalid-argument', detail: `${action}: an argument is longer than ${limit} characters` });
    const args: string[] = [];
    for (const [i, param] of spec.params.entries()) {
      try {
        args.push(param.validate(rawArgs[i] ?? '', this.cfg));
      } catch (err) {
        return done({ ok: false, error: 'invalid-argument', detail: `${action} <${param.name}>: ${param.secret && !param.safeMessage ? 'invalid value' : message(err)}` });
      }
    }
    try {
      if ('run' in spec) return done({ ok: true, ...(await this.runWithDeadline(action, spec, args)) });
      const cmd = spec.command(args, this.cfg);
      const r = await exec(cmd.file, cmd.args, { timeoutMs: cmd.timeoutMs ?? 30_000, okCodes: cmd.okCodes ?? [0], maxOutputBytes: 1024 * 1024 });
      // An accepted non-zero code ("postfix status": 1, not running) is no answer when the daemon is absent.
      const absent = r.code === 0 ? null : spec.absent?.(args, this.cfg);
      if (absent) return done({ ok: false, error: 'unavailable', detail: absent, exec: { kind: 'exit', code: r.code } });
      return done({ ok: true, ...r });
    } catch (err) {
      // An absent daemon (program not installed, socket or configuration missing) is `unavailable`, not a failure.
      const absent = err instanceof ExecError || err instanceof ActionFailed ? spec.absent?.(args, this.cfg) : null;
      if (err instanceof ExecError) {
        logExecOutput(this.log, action, err);
        if (err.kind === 'not-found') return done({ ok: false, error: 'unavailable', detail: notInstalled(err.program), exec: execOf(err) });
        if (absent) return done({ ok: false, error: 'unavailable', detail: absent, exec: execOf(err) });
        return done({ ok: false, error: 'failed', detail: publicExecDetail(err), exec: execOf(err) });
      }
      if (err instanceof ActionFailed) {
        const error = err.exec?.kind === 'not-found' || absent ? 'unavailable' : 'failed';
        return done({ ok: false, error, detail: absent ?? err.message, ...(err.exec ? { exec: err.exec } : {}) });
      }
      // The helper's own file work (`run`): the reason, never the content.
      return done({ ok: false, error: 'failed', detail: clip(message(err)) });
    }
  }

  /** A `run` action, answered `failed` (timeout) at its deadline: one stuck action never holds its connection. */
  private async runWithDeadline(action: string, spec: Extract<ActionSpec, { run: unknown }>, args: string[]): Promise<HelperResult> {
    const ms = spec.deadlineMs ?? RUN_DEADLINE_MS;
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(new ActionFailed(`${action} did not finish within ${ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`}; the helper stopped waiting for it`, { kind: 'timeout' }));
      }, ms);
    });
    try {
      return await Promise.race([spec.run(args, this.cfg, { log: this.log, signal: abort.signal }), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }
}

const execOf = (err: ExecError): { kind: ExecError['kind']; code?: number } => ({ kind: err.kind, ...(err.code === undefined ? {} : { code: err.code }) });

/** An answer as the caller sees it: a result, or a typed HelperError. */
export function resultOf(outcome: Outcome): HelperResult {
  if (outcome.ok) return { code: outcome.code, stdout: outcome.stdout, stderr: outcome.stderr };
  if (outcome.error === 'failed') throw new HelperError('failed', outcome.detail, outcome.exec);
  if (outcome.error === 'unavailable') throw new HelperError('unavailable', outcome.detail, outcome.exec);
  if (outcome.error === 'unknown-action' || outcome.error === 'invalid-argument') throw new HelperError('refused', outcome.detail);
  throw new HelperError('failed', `the helper could not take the request (${outcome.error}): ${outcome.detail}`);
}

/** Runs actions in this process: for a caller that is already root (the CLI as root, tests). */
export class DirectHelperClient implements HelperClient {
  constructor(private readonly runner: HelperRunner) {}

  async run(action: string, args: readonly string[]): Promise<HelperResult> {
    return resultOf(await this.runner.answer(action, args));
  }
}
