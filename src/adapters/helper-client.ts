import { AppError } from '../shared/errors.js';
import type { ErrorCode } from '../shared/errors.js';
import type { ExecErrorKind } from './exec.js';

/** What a program run by the helper gave back (its exit code was one the action accepts). */
export type HelperResult = { code: number; stdout: string; stderr: string };

/** The one door to root work: a fixed action name and its arguments, nothing else. */
export type HelperClient = { run(action: string, args: readonly string[]): Promise<HelperResult> };

/**
 * - `unreachable`: no helper answers on the socket (the CLI exits 69);
 * - `refused`: the action is not on the list or an argument failed validation; nothing ran;
 * - `failed`: the program ran and failed (`exec` says how), or the answer was unusable.
 */
export type HelperErrorKind = 'unreachable' | 'refused' | 'failed';

const CODE: Record<HelperErrorKind, ErrorCode> = { unreachable: 'unavailable', refused: 'bad_request', failed: 'upstream' };

export class HelperError extends AppError {
  constructor(
    readonly kind: HelperErrorKind,
    detail: string,
    readonly exec?: { kind: ExecErrorKind; code?: number | undefined },
  ) {
    super(CODE[kind], detail);
    this.name = 'HelperError';
  }
}

export function unreachable(path: string, why: string): HelperError {
  return new HelperError(
    'unreachable',
    `cannot reach mailsvc-helper at ${path} (${why}); start mailsvc-helper.socket (systemctl enable --now mailsvc-helper.socket)`,
  );
}
