import { AppError } from '../shared/errors.js';
import type { ErrorCode } from '../shared/errors.js';
import { SettingsError } from '../config/settings-error.js';
import { CliError, escapeControl } from '../shared/terminal/output.js';
import { KeyFileMissing } from '../shared/key-file-missing.js';

export { CliError, output } from '../shared/terminal/output.js';

const EXIT: Partial<Record<ErrorCode, number>> = { bad_request: 2, validation: 2, conflict: 3, not_found: 4, unavailable: 69 };


/** One clear line on stderr and a non-zero exit code. */
export function fail(err: unknown): never {
  let message: string;
  let code = 1;
  if (err instanceof CliError) {
    message = err.message;
    code = err.exitCode;
  } else if (err instanceof SettingsError) {
    message = `${err.message}; fix it in the environment or in the settings file`;
    code = 78;
  } else if (err instanceof KeyFileMissing) {
    message = err.message;
    code = 78;
  } else if (err instanceof AppError) {
    message = err.detail;
    code = EXIT[err.code] ?? 1;
  } else if (err instanceof Error && /ECONNREFUSED|ENOTFOUND|ETIMEDOUT/.test(err.message)) {
    message = `cannot reach a server: ${err.message}; check MAILSVC_DATABASE_URL and MAILSVC_REDIS_URL and that the server runs`;
    code = 69;
  } else {
    message = err instanceof Error ? err.message : String(err);
  }
  process.stderr.write(`mailsvc: ${escapeControl(message, true)}\n`);
  process.exit(code);
}
