import type { Command } from 'commander';
import type { Settings } from '../../config/settings.js';
import { CliError, output } from '../../shared/terminal/output.js';
import { askHidden, readStdinLine } from '../../shared/terminal/prompt.js';
import { notAudited } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { MfaService } from '../mfa/index.js';
import type { TokenService } from './token.service.js';

/**
 * `set-password` needs the settings (`runSettings`) and, when the database is
 * there and migrated, the tokens to revoke (`runIfMigrated`, null otherwise);
 * `mfa reset` the database, checked first (`run`).
 */
export type AdminDeps = { mfa: MfaService; tokens: TokenService; notifyChanges(): void };

const MIN_PASSWORD = 12;

export function adminCommands(program: Command, runSettings: Run<Settings>, run: Run<AdminDeps>, runIfMigrated: Run<AdminDeps | null>): void {
  const admin = program.command('admin').description('the administrator identity');

  admin
    .command('set-password')
    .description('ask for a new administrator password (twice, without echo), revoke every access token and write its argon2id hash to the settings file')
    .option('--stdin', 'read the password from the first line of standard input instead of asking')
    .option('--no-restart', 'as root on an installed host: do not restart the running service (it then uses the password at its next start)')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { stdin?: boolean; json?: boolean; restart: boolean }) => {
      const settings = await runSettings((s) => Promise.resolve(s));
      let password: string;
      if (opts.stdin) {
        password = await readStdinLine();
      } else {
        password = await askHidden('New administrator password: ');
        const again = await askHidden('Repeat it: ');
        if (again !== password) throw new CliError('the two passwords differ; nothing was changed', 2);
      }
      if (password.length < MIN_PASSWORD) throw new CliError(`the password must have at least ${MIN_PASSWORD} characters; nothing was changed`, 2);
      // argon2 and the settings writer are loaded here, not for every `mailsvc` start.
      const [{ writeSettingsKey }, { hashPassword }] = await Promise.all([import('../../config/settings-file.js'), import('../../shared/password-hash.js')]);
      const hash = await hashPassword(password);
      // Every token goes now (a running service drops its cache; Redis tells the other instances), and again
      // at the next start, which sees a new password: tokens signed in meanwhile with the old one go too.
      const revoked = await runIfMigrated(async (m) => {
        if (m === null) return null;
        const n = await m.tokens.revokeAll();
        m.notifyChanges();
        return n;
      });
      writeSettingsKey(settings.configFile, 'MAILSVC_ADMIN_PASSWORD_HASH', hash);
      // As root on a host under systemd where mailsvc.service runs: restart it and wait until it answers,
      // so the next command (mailsvc doctor, a sign-in) meets the new password.
      const restarted = opts.restart ? await restartRunningService(settings) : null;
      output(opts.json, { ok: true, settings_file: settings.configFile, revoked_tokens: revoked ?? 0, restarted: restarted === 'restarted' }, () =>
        `Password hash written to ${settings.configFile}. ` +
        (revoked === null ? 'No migrated database yet, so no access token to revoke. ' : `${revoked} access token(s) revoked. `) +
        (restarted === 'restarted' ? 'The service was restarted and answers: it uses the new password.' : restarted ?? 'Restart the service (systemctl restart mailsvc) to use it.') +
        (process.env.MAILSVC_ADMIN_PASSWORD_HASH ? '\nNote: MAILSVC_ADMIN_PASSWORD_HASH is set in the environment and wins over the file.' : ''),
      );
    });

  admin
    .command('mfa')
    .description('second factors of the administrator')
    .command('reset')
    .description('turn off TOTP and SMS OTP and revoke every access token (for an administrator locked out of their second factor)')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { json?: boolean }) => {
      await run(async (m) => {
        const status = await m.mfa.resetAll();
        const revoked = await m.tokens.revokeAll();
        // A running service caches tokens and the MFA record: tell it to drop them.
        m.notifyChanges();
        output(opts.json, { ok: true, revoked_tokens: revoked, status }, () =>
          `Second factors reset: TOTP off and its secret erased, SMS OTP off. ${revoked} access token(s) revoked.\n` +
          'Sign in with the password and enroll again under /auth/mfa.',
        );
      });
    });
  // It also runs on a new host, before there is a database to record in.
  notAudited(program, ['admin set-password'], 'may run before the database exists (a new host); it writes the settings file and revokes every access token');
}

/**
 * Restarts mailsvc.service when this runs as root on a host booted with
 * systemd and the service is active, then waits for /health. null: nothing
 * to restart (not root, no systemd, service not running); 'restarted'; or
 * what went wrong, as a line that says what to do.
 */
async function restartRunningService(settings: Settings): Promise<string | null> {
  if (process.getuid?.() !== 0) return null;
  const [{ existsSync }, { exec }] = await Promise.all([import('node:fs'), import('../../adapters/exec.js')]);
  if (!existsSync('/run/systemd/system')) return null;
  if ((await exec('systemctl', ['is-active', '--quiet', 'mailsvc.service'], { okCodes: [0, 1, 3, 4] })).code !== 0) return null;
  const done = await exec('systemctl', ['restart', 'mailsvc.service'], { okCodes: [0, 1], timeoutMs: 120_000 });
  if (done.code !== 0) return `The restart failed (${done.stderr.trim()}): systemctl status mailsvc; journalctl -u mailsvc.`;
  const { healthUrl, waitForService } = await import('../../shared/service-wait.js');
  const notUp = await waitForService(healthUrl(settings.apiHost, settings.apiPort));
  return notUp === null ? 'restarted' : `The service was restarted but ${notUp}.`;
}
