import { AppError } from '../shared/errors.js';
import type { ErrorCode } from '../shared/errors.js';
import type { ExecErrorKind } from './exec.js';
import { DAEMON_RETRY_AFTER } from '../shared/daemon-hints.js';

/** What a program run by the helper gave back (its exit code was one the action accepts). */
export type HelperResult = { code: number; stdout: string; stderr: string };

/** The one door to root work: a fixed action name and its arguments, nothing else. */
export type HelperClient = { run(action: string, args: readonly string[]): Promise<HelperResult> };

/**
 * - `unreachable`: no helper answers on the socket (the CLI exits 69);
 * - `refused`: the action is not on the list or an argument failed validation; nothing ran;
 * - `unavailable`: the daemon the action needs is absent: its program is not
 *   installed (`exec.kind` `not-found`), its socket or configuration is missing;
 *   the detail says what to install or start (HTTP 503 with Retry-After, CLI exit 69);
 * - `failed`: the program ran and failed (`exec` says how), or the answer was unusable.
 */
export type HelperErrorKind = 'unreachable' | 'refused' | 'unavailable' | 'failed';

const CODE: Record<HelperErrorKind, ErrorCode> = { unreachable: 'unavailable', refused: 'bad_request', unavailable: 'unavailable', failed: 'upstream' };

export class HelperError extends AppError {
  constructor(
    readonly kind: HelperErrorKind,
    detail: string,
    readonly exec?: { kind: ExecErrorKind; code?: number | undefined },
  ) {
    super(CODE[kind], detail, CODE[kind] === 'unavailable' ? { retryAfter: DAEMON_RETRY_AFTER } : {});
    this.name = 'HelperError';
  }
}

export function unreachable(path: string, why: string): HelperError {
  return new HelperError(
    'unreachable',
    `cannot reach mailsvc-helper at ${path} (${why}); start mailsvc-helper.socket (systemctl enable --now mailsvc-helper.socket)`,
  );
}
