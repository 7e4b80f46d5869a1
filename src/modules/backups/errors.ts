import { AppError } from '../../shared/errors.js';

// The backups module's refusals, in a file of their own: the commands test
// for them with instanceof, and `mailsvc --help` loads the commands — so
// these must not pull the backup service, Kysely or the migrations into
// every start of the CLI.

/** LOCAL_DIR (or a parent) a user other than root could write: never used by a root run (CLI exit 78). */
export class UnsafeBackupDir extends AppError {
  constructor(detail: string) {
    super('conflict', detail);
  }
}

/** The restore wrote what it was asked to, but the host would not start on it (CLI exit 1). */
export class RestoreUnproven extends AppError {
  constructor(problems: string[], steps: string[]) {
    super('conflict', `the restore ran (${steps.join('; ')}) but the result does not open, so it is not complete: ${problems.join('; ')}`);
  }
}

/** A restore of a physical database copy: never automatic; the message holds the manual steps (CLI exit 3). */
export class PhysicalRestoreRefused extends AppError {
  constructor(readonly headline: string, readonly steps: string[]) {
    super('conflict', `${headline}; to put it back, as root on the database host: ${steps.map((x, i) => `(${i + 1}) ${x}`).join('; ')}`);
  }
}

/** The restored database could not open its secrets with this host's key (CLI exit 78: the key is a setting). */
export class KeyMismatchRefused extends AppError {
  constructor(detail: string) {
    super('conflict', detail);
  }
}
