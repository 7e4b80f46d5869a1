import type { Command } from 'commander';
import { AppError } from '../../shared/errors.js';
import { CliError, escapeControl, output } from '../../shared/terminal/output.js';
import { readStdinLine } from '../../shared/terminal/prompt.js';
import { table } from '../../shared/terminal/options.js';
import { readOnly, notAudited } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { Job } from '../jobs/index.js';
import type { ProgressView } from '../../shared/terminal/progress.js';
import type { BackupsModule } from './index.js';
import type { BackupService } from './backup.service.js';
import { KeyMismatchRefused, PhysicalRestoreRefused, RestoreUnproven, UnsafeBackupDir } from './errors.js';
import type { BackupRecord, BackupShow, RestoreReport, VerifyReport } from './schema.js';

const size = (n: number): string => (n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(1)} GiB` : n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${Math.ceil(n / 1024)} KiB`);
const verified = (b: BackupRecord): string => (b.verify_ok === null ? '-' : b.verify_ok ? `ok ${b.verified_at?.slice(0, 16) ?? ''}` : `FAILED ${b.verified_at?.slice(0, 16) ?? ''}`);

function describeShow(s: BackupShow): string {
  const lines = Object.entries(s.settings).map(([k, v]) => `  ${k.padEnd(20)} ${(String(v).replace(/\n/g, '; ') || '-').padEnd(24)} (${s.sources[k] ?? 'default'})`);
  const last = s.last_backup;
  return [
    'Settings:',
    ...lines,
    `Last backup: ${last ? `${last.id} (${last.type}, ${size(last.size)}, ${last.files} files) at ${last.completed_at}` : 'none'}`,
    `Last verify: ${s.last_verify ? `${s.last_verify.ok ? 'ok' : 'FAILED'} at ${s.last_verify.verified_at} (${s.last_verify.backup ?? '-'})${s.last_verify.problems.map((p) => `\n  - ${p}`).join('')}` : 'never'}`,
  ].join('\n');
}

type JobRun = (m: BackupsModule, update: ProgressView['update'], signal: AbortSignal) => Promise<Job>;

/** Runs a job in the foreground with the progress view; Ctrl-C interrupts it. */
async function foreground(run: Run<BackupsModule>, view: () => ProgressView, start: JobRun): Promise<Job> {
  const display = view();
  const abort = new AbortController();
  const interrupt = (): void => abort.abort(new Error('interrupted (Ctrl-C)'));
  process.once('SIGINT', interrupt);
  try {
    const job = await run((m) => start(m, (u) => display.update(u), abort.signal));
    display.end(job);
    return job;
  } finally {
    process.off('SIGINT', interrupt);
  }
}

/** `mailsvc backup show|list|set|run|verify|…` and `mailsvc restore`. */
export function backupCommands(program: Command, run: Run<BackupsModule>, runFresh: Run<BackupsModule>, view: () => ProgressView, runRestore: Run<BackupService>): void {
  const b = program.command('backup').description('backups of the mail storage, the database and the configuration (full and incremental, local and remote)');

  b.command('show')
    .description('the backup settings, the last backup and the last verify')
    .option('--json', 'print it as JSON')
    .action(async (opts: { json?: boolean }) => {
      const [s, keyFile] = await run(async (m) => [await m.show(), m.manifestKeyFile] as const);
      output(opts.json, s, () => `${describeShow(s)}\nManifest key: ${keyFile} (root-only; it authenticates every manifest. Save a copy beside the remote encryption key: a restore on a new host needs it, mailsvc restore --manifest-key FILE)`);
    });

  b.command('list')
    .description('complete backups by chain (a full and the incrementals built on it), newest first')
    .option('--json', 'print an array of backups, newest first')
    .action(async (opts: { json?: boolean }) => {
      const list = await run((m) => Promise.resolve(m.service.list()));
      output(opts.json, list, () => (list.length === 0 ? 'No backups yet: run mailsvc backup run' : table(['id', 'type', 'parent', 'size', 'files', 'verified'], list.map((x) => [x.id, x.type, x.parent ?? '-', size(x.size), String(x.files), verified(x)]))));
    });

  b.command('set')
    .description('change a backup setting (TYPE, FULL_WEEKDAY, RETENTION_DAYS, REMOTE_TARGETS, ONCALENDAR, COMPRESSION, INCLUDE_REDIS, STORAGE_TYPE, …) and say what it needs')
    .argument('<key>', 'a MAILSVC_BACKUP_ suffix, e.g. RETENTION_DAYS or retention-days')
    .argument('<value>', 'the new value (ONCALENDAR: several expressions separated by ";")')
    .option('--json', 'print the result as JSON')
    .action(async (key: string, value: string, opts: { json?: boolean }) => {
      const r = await run((m) => m.set({ [key]: value }));
      output(opts.json, r, () => `Stored ${r.changed.join(', ')} (every process reads it at once).\nNext: ${r.next_step}`);
    });

  b.command('run')
    .description('make a backup now (full or incremental as TYPE says), check it, copy it to the remotes, apply retention')
    .option('--full', 'a full backup whatever TYPE says')
    .option('--json', 'print the finished backup record as JSON')
    .action(async (opts: { full?: boolean; json?: boolean }) => {
      const job = await foreground(run, view, (m, update, signal) => {
        try {
          m.service.prepareDir();
        } catch (err) {
          if (err instanceof UnsafeBackupDir) throw new CliError(err.detail, 78);
          throw err;
        }
        m.service.assertIdle();
        return m.runner.runHere('backup', { full: opts.full === true }, update, signal);
      });
      if (job.state === 'failed') throw new CliError(`backup failed: ${job.message}`, 1);
      const r = job.result as BackupRecord & { removed: string[]; remote: string[]; remote_removed: string[]; warnings: string[] };
      output(opts.json, r, () => [`Backup ${r.id} (${r.type}) complete: ${r.path}, ${size(r.size)}, ${r.files} files.`, ...r.remote.map((t) => `Copied to ${t} and checked.`), ...r.removed.map((id) => `Retention removed ${id}.`), ...r.remote_removed.map((id) => `Retention removed ${id} on the remote.`), ...r.warnings.map((w) => `Note: ${w}`)].join('\n'));
    });

  b.command('verify')
    .description('restore the newest chain into scratch space and compare sha256, row counts and file counts with its manifest (exit 1 on any difference)')
    .option('--json', 'print the verify report as JSON')
    .action(async (opts: { json?: boolean }) => {
      const job = await foreground(run, view, (m, update, signal) => {
        m.service.assertIdle();
        return m.runner.runHere('backup-verify', {}, update, signal);
      });
      if (job.state === 'failed') throw new CliError(`verify could not run: ${job.message}`, 1);
      const r = job.result as VerifyReport;
      output(opts.json, r, () => (r.ok ? `Verified ${r.backup ?? ''} (chain ${r.chain.join(' → ')}): it restores and matches its manifest.` : `Verify of ${r.backup ?? '-'} FAILED:\n${r.problems.map((p) => `  - ${p}`).join('\n')}`));
      if (!r.ok) process.exitCode = 1;
    });

  b.command('run-job')
    .description('run one queued backup or verify job as root (what mailsvc-backup@<job>.service runs; POST /admin/backups and /admin/backups/verify queue them)')
    .argument('<job>', 'the job id')
    .option('--json', 'print the final job record as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      const job = await foreground(run, view, async (m, update, signal) => {
        const queued = await m.runner.get(id);
        if (queued.kind !== 'backup' && queued.kind !== 'backup-verify') throw new CliError(`job ${id} is a ${queued.kind} job, not a backup or verify`, 2);
        await m.runner.run(id, update, signal);
        return m.runner.get(id);
      });
      if (opts.json) process.stdout.write(`${JSON.stringify(job, null, 2)}\n`);
      if (job.state === 'failed') throw new CliError(`${job.kind} job ${id} failed: ${job.message}`, 1);
    });

  b.command('encryption-key')
    .description('print the key of the archives sent to remotes, once; keep it off this host (a restore on a new host needs it)')
    .action(async () => {
      const key = await run((m) => m.remote.secrets.showKeyOnce());
      if (key === null) throw new CliError('the encryption key was shown before and is not shown again; if it is lost, set a new MAILSVC_BACKUP_ENCRYPTION_KEY and run a full backup', 3);
      process.stdout.write(`${key}\nKeep this key off this host (a password manager, a safe). Restoring from a remote on a new host needs MAILSVC_BACKUP_ENCRYPTION_KEY=<this key>.\n`);
    });

  b.command('remote-credential')
    .description("store one option of an rclone remote, sealed (e.g. pass, key_pem); the value is read from stdin")
    .argument('<remote>', 'the rclone remote name (as in REMOTE_TARGETS)')
    .argument('<option>', 'the rclone option, e.g. pass')
    .action(async (remote: string, option: string) => {
      const value = await readStdinLine();
      if (value === '') throw new CliError('give the value on stdin', 2);
      await run((m) => m.remote.setCredential(remote, option, value));
      process.stdout.write(`Stored ${remote}.${option.toLowerCase()} (sealed).\n`);
    });

  b.command('fetch')
    .description('download a backup and its chain from a remote target, decrypted, into LOCAL_DIR (a restore on a new host starts here)')
    .argument('<target>', '<remote>:<path> as in REMOTE_TARGETS')
    .argument('<id>', 'the backup id')
    .option('--json', 'print the fetched ids as JSON')
    .action(async (target: string, id: string, opts: { json?: boolean }) => {
      const ids = await runFresh((m) => m.remote.fetch(target, id, m.service.localDir));
      output(opts.json, ids, () => `Fetched ${ids.join(', ')}; restore with: mailsvc restore --source <LOCAL_DIR>/${id}`);
    });

  b.command('units')
    .description('print (or --write into a directory) mailsvc-backup.service/.timer and mailsvc-backup-verify.service/.timer rendered from ONCALENDAR')
    .option('--write <dir>', 'write the units there (e.g. /etc/systemd/system), each checked with systemd-analyze')
    .option('--json', 'print the units as JSON')
    .action(async (opts: { write?: string; json?: boolean }) => {
      const units = await runFresh((m) => m.units(opts.write));
      output(opts.json, units, () => units.map((u) => `# ${u.name}\n${u.text}`).join('\n'));
    });

  program
    .command('restore')
    .description('restore the chain ending at --source (neither --restore-files nor --restore-db: both): refuses a broken chain or a manifest mismatch before touching anything; stops Postfix meanwhile')
    .requiredOption('--source <backup-dir>', 'a backup directory (backup list shows them)')
    .option('--restore-files', 'restore the mail storage')
    .option('--restore-db', 'restore the database (then migrate it)')
    .option('--restore-config', 'also put the configuration back (settings and key file, DKIM keys, daemon files checked by each daemon, TLS): what a fresh host needs')
    .option('--manifest-key <file>', 'the backup manifest key saved from the host the backup was made on (a restore on a new host); installed when this host has none')
    .option('--accept-unsigned', 'accept manifests made before mailsvc signed them (only for backups you know no one else could write)')
    .option('--json', 'print the report as JSON')
    .action(async (opts: { source: string; restoreFiles?: boolean; restoreDb?: boolean; restoreConfig?: boolean; manifestKey?: string; acceptUnsigned?: boolean; json?: boolean }) => {
      const both = !opts.restoreFiles && !opts.restoreDb;
      const display = view();
      let last = { progress: 0, message: '' };
      const r: RestoreReport = await runRestore((service) =>
        service.restore(
          opts.source,
          { files: both || opts.restoreFiles === true, db: both || opts.restoreDb === true, config: opts.restoreConfig === true },
          (progress, message) => {
            last = { progress, message };
            display.update(last);
          },
          undefined,
          {
            ...(opts.manifestKey !== undefined ? { manifestKey: opts.manifestKey } : {}),
            acceptUnsigned: opts.acceptUnsigned === true,
            onUnsigned: (ids) => process.stderr.write(`WARNING: --accept-unsigned: restoring from UNSIGNED manifest(s) ${ids.join(', ')}; nothing proves these backups were not planted or changed.\n`),
          },
        ),
      ).catch((err: unknown) => {
        // A broken chain or a manifest mismatch is a check that found problems: exit 1 (nothing was changed).
        if (err instanceof AppError && err.code === 'validation') throw new CliError(err.detail, 1);
        // A physical database copy is put back by hand (the message lists the steps): exit 3, distinct from a broken backup.
        if (err instanceof PhysicalRestoreRefused) {
          process.stderr.write(escapeControl(`To put the database back, as root on the database host:\n${err.steps.map((x, i) => `  ${i + 1}. ${x}`).join('\n')}\n`));
          throw new CliError(err.headline, 3);
        }
        // This host's key cannot open the restored secrets: a setting to fix (the key file or MAILSVC_SECRET_KEY).
        if (err instanceof KeyMismatchRefused) throw new CliError(err.detail, 78);
        // A chain another user could have written (a replayed old backup): copy it somewhere root's first.
        if (err instanceof UnsafeBackupDir) throw new CliError(err.detail, 78);
        // Restored, but the result would not start (the proof failed): what is wrong is the message.
        if (err instanceof RestoreUnproven) throw new CliError(err.detail, 1);
        throw err;
      });
      display.end({ progress: 1, message: last.message });
      output(opts.json, r, () => escapeControl(['Restored:', ...r.steps.map((s) => `  - ${s}`)].join('\n')));
    });

  readOnly(program, ['backup show', 'backup list']);
  notAudited(program, ['backup verify'], 'restores into scratch space and compares: nothing in use changes');
  notAudited(program, ['backup run-job'], 'runs a job that POST /admin/backups or /admin/backups/verify queued (recorded there)');
  notAudited(program, ['backup encryption-key'], 'prints the remote key once (the first showing is remembered)');
  notAudited(program, ['backup units'], 'prints, or writes into a directory given, the systemd units rendered from the settings');
}
