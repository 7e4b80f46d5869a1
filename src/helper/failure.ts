import { basename } from 'node:path';
import type { ExecError, ExecErrorKind } from '../adapters/exec.js';
import type { ApplyFailure } from '../adapters/config-applier/index.js';
import type { ActionLog } from './action-types.js';

/**
 * What a reply may say about a failure. A daemon's error output can quote a
 * file it read (nft and rspamadm print the offending line), and the caller may
 * have chosen what it read: so a reply carries a short fixed sentence, and the
 * program's output goes to the helper's own log (root's journal) only.
 */

/** Where the rest is: said in every reply that leaves output out. */
export const IN_THE_LOG = "its output is in the helper's log";

/**
 * A `run` action's failure with a reply text the action chose (fixed, never a
 * program's output) and, when a program failed, how.
 */
export class ActionFailed extends Error {
  constructor(
    detail: string,
    readonly exec?: { kind: ExecErrorKind; code?: number | undefined },
  ) {
    super(detail);
    this.name = 'ActionFailed';
  }
}

/** How a program failed, in a fixed sentence: its name, exit code or signal, never its stderr. */
export function publicExecDetail(err: ExecError): string {
  const name = basename(err.program);
  const more = err.stderr ? `; ${IN_THE_LOG}` : '';
  if (err.kind === 'exit') return `${name} exited ${err.code ?? '?'}${more}`;
  if (err.kind === 'signal') return `${name} was ended by ${err.signal ?? 'a signal'}${more}`;
  // not-found, timeout, output-cap, aborted: the message names the program and the limit only.
  return err.message;
}

/** The program's stderr (as ExecError keeps it) into the helper's log, at warn. */
export function logExecOutput(log: ActionLog, action: string, err: ExecError): void {
  if (!err.stderr) return;
  log.warn({ helperOutput: { action, program: basename(err.program), kind: err.kind, code: err.code, stderr: err.stderr } }, 'helper program output');
}

/**
 * A config-applier failure as a reply may state it: the stage and daemon, and
 * for a failed check or reload a fixed sentence (the checker's or daemon's
 * output is logged). A write failure's reason is the helper's own file
 * operation (an errno on a path from its settings), so it stays.
 */
export function publicApplyFailure(r: Pick<ApplyFailure, 'stage' | 'daemon' | 'detail' | 'restoreErrors'>, what: string, log: ActionLog, action: string): string {
  if (r.stage !== 'write' || r.restoreErrors.length > 0) log.warn({ helperOutput: { action, stage: r.stage, daemon: r.daemon, detail: r.detail, restoreErrors: r.restoreErrors } }, 'helper apply failed');
  const restore = r.restoreErrors.length ? ` Restoring failed too (${r.restoreErrors.length} item(s)); the helper's log says which.` : ' Every file was restored.';
  if (r.stage === 'check') return `check of ${what} failed: its checker refused the rendered configuration (${IN_THE_LOG}).${restore}`;
  if (r.stage === 'reload') return `reload of ${what} failed (${IN_THE_LOG}).${restore}`;
  return `write of ${what} failed: ${r.detail}.${restore}`;
}
