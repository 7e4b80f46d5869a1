import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDb } from '../../src/db/database.js';
import { BackupSecrets } from '../../src/modules/backups/backup-secrets.repository.js';
import { SecretBox } from '../../src/shared/secret-box.js';
import { CLI_BIN, runCli } from './cli.js';
import type { CliResult } from './cli.js';
import { NOBODY } from './unprivileged-client.js';

/** Why the service's side cannot run as an unprivileged user here (null: it can). */
export function serviceUserUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'not root (the backup run is root\'s, and setpriv needs root to become nobody)';
  if (spawnSync('setpriv', ['--version'], { stdio: 'ignore', timeout: 30_000 }).status !== 0) return 'setpriv (util-linux) is missing';
  return null;
}

/**
 * The CLI as the service user (nobody, no supplementary group), with the
 * service's own environment: the database URL and the secret key (what the
 * service holds), a data directory of its own, and none of root's
 * RCLONE_CONFIG_* (those live in the backup units' environment file).
 */
export function serviceCli(env: Record<string, string>): (args: string[], input?: string) => Promise<CliResult> {
  const data = mkdtempSync(join(tmpdir(), 'mailsvc-service-'));
  chownSync(data, NOBODY, NOBODY);
  const own = { MAILSVC_DATABASE_URL: env.MAILSVC_DATABASE_URL ?? '', MAILSVC_SECRET_KEY: env.MAILSVC_SECRET_KEY ?? '', MAILSVC_DATA_DIR: data, MAILSVC_HELPER: 'direct', HOME: data };
  return (args, input) => runCli(args, { env: own, input, wrap: ['setpriv', `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--'] });
}

/** What a service with direct database access stores, bypassing every check of the CLI and the API: a sealed backup secret. */
export async function forceSecret(env: Record<string, string>, name: string, value: string): Promise<void> {
  const db = createDb(env.MAILSVC_DATABASE_URL ?? '');
  try {
    await new BackupSecrets(db, () => new SecretBox(Buffer.from(env.MAILSVC_SECRET_KEY ?? '', 'base64'))).put(name, value);
  } finally {
    await db.destroy();
  }
}

/** A program that leaves `marker` behind when anything runs it (and prints a token, as rclone's *_command options expect). */
export function markerScript(dir: string, marker: string): string {
  const path = join(dir, 'pwn.sh');
  writeFileSync(path, `#!/bin/sh\ntouch '${marker}'\necho token\n`);
  chmodSync(path, 0o755);
  return path;
}

export { CLI_BIN };
