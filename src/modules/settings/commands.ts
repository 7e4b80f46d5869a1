import type { Command } from 'commander';
import { escapeControl, output, CliError } from '../../shared/terminal/output.js';
import { yesNo } from '../../shared/terminal/options.js';
import { readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { JobRunner } from '../jobs/index.js';
import type { ProgressView } from '../../shared/terminal/progress.js';
import type { ApplyUpdateInput, UpdateCheck } from '../updates/index.js';
import type { SettingsView } from './schema.js';
import type { SettingsService } from './settings.service.js';

type Deps = { service: SettingsService; checkUpdate(): Promise<UpdateCheck>; runner: JobRunner; updateJob: string };

const describeSettings = (s: SettingsView): string =>
  [
    `update channel: ${s.update_channel}${s.update_channel_source === 'default' ? ' (MAILSVC_UPDATE_CHANNEL)' : ''}`,
    `auto-updates:   ${s.auto_updates ? 'yes' : 'no'}`,
    `stable feed:    ${s.update_feeds.stable}`,
    `nightly feed:   ${s.update_feeds.nightly}`,
    `version:        ${s.version}`,
  ].join('\n');

const describeCheck = (c: UpdateCheck): string =>
  c.update_available
    ? `${c.available_version} is available on the ${c.channel} channel (running ${c.current_version}): mailsvc settings apply-update`
    : c.downgrade
      ? `the ${c.channel} channel offers ${c.available_version}, older than ${c.current_version}${c.downgrade_allowed ? ' (apply-update --allow-downgrade may install it)' : ' (a downgrade is refused: this database has newer migrations)'}`
      : `${c.current_version} is the newest release on the ${c.channel} channel`;

/** `mailsvc settings show|set|check-update|apply-update`. */
export function settingsCommands(program: Command, run: Run<Deps>, view: () => ProgressView): void {
  const settings = program.command('settings').description('run-time settings (update channel, auto-updates) and updates');

  settings
    .command('show')
    .description('the update channel, auto-updates and the feeds')
    .option('--json', 'print them as JSON')
    .action(async (opts: { json?: boolean }) => {
      const s = await run((m) => m.service.get());
      output(opts.json, s, () => describeSettings(s));
    });

  settings
    .command('set')
    .description('change the update channel or auto-updates (stored; wins over the MAILSVC_* setting)')
    .option('--update-channel <channel>', 'stable or nightly')
    .option('--auto-updates <yes|no>', 'let the auto-update timer install new releases', yesNo)
    .option('--json', 'print the settings as JSON afterwards')
    .action(async (opts: { updateChannel?: string; autoUpdates?: boolean; json?: boolean }) => {
      if (opts.updateChannel !== undefined && opts.updateChannel !== 'stable' && opts.updateChannel !== 'nightly') throw new CliError('--update-channel must be stable or nightly', 2);
      const patch = { ...(opts.updateChannel ? { update_channel: opts.updateChannel as 'stable' | 'nightly' } : {}), ...(opts.autoUpdates === undefined ? {} : { auto_updates: opts.autoUpdates }) };
      if (Object.keys(patch).length === 0) throw new CliError('name a setting: --update-channel stable|nightly or --auto-updates yes|no', 2);
      const s = await run((m) => m.service.update(patch));
      output(opts.json, s, () => describeSettings(s));
    });

  settings
    .command('check-update')
    .description("check the selected channel's signed feed for a newer release")
    .option('--json', 'print the answer as JSON')
    .action(async (opts: { json?: boolean }) => {
      const { feed: _feed, ...c } = (await run((m) => m.checkUpdate())) as UpdateCheck & { feed?: unknown };
      output(opts.json, c, () => describeCheck(c));
    });

  settings
    .command('apply-update')
    .description('install the newer release of the selected channel; any failure switches back and restores the database (exit 1)')
    .option('--allow-downgrade', 'install an older release when its migrations allow it')
    .option('--auto', 'what the auto-update timer runs: do nothing unless auto-updates are on and a newer release is offered')
    .option('--job <id>', 'run this queued update job (what mailsvc-update@<id>.service runs)')
    .option('--json', 'print the final job record as JSON')
    .action(async (opts: { allowDowngrade?: boolean; auto?: boolean; job?: string; json?: boolean }) => {
      const input: ApplyUpdateInput = opts.allowDowngrade ? { allow_downgrade: true } : {};
      const display = view();
      const abort = new AbortController();
      const interrupt = (): void => abort.abort(new Error('interrupted (Ctrl-C)'));
      process.once('SIGINT', interrupt);
      try {
        const job = await run(async (m) => {
          if (opts.auto) {
            const [s, c] = [await m.service.get(), await m.checkUpdate()];
            if (!s.auto_updates || !c.update_available) return null;
          }
          if (opts.job) {
            // This runs as root (mailsvc-update@.service) on a row the service user could have written: only an update job.
            const queued = await m.runner.get(opts.job);
            if (queued.kind !== m.updateJob) throw new CliError(`job ${opts.job} is a ${queued.kind} job, not an update`, 2);
            await m.runner.run(opts.job, (u) => display.update(u), abort.signal);
            return m.runner.get(opts.job);
          }
          return m.runner.runHere(m.updateJob, input, (u) => display.update(u), abort.signal);
        });
        if (job === null) {
          output(opts.json, { skipped: true }, () => 'auto-updates are off, or no newer release is offered: nothing to do');
          return;
        }
        display.end(job);
        if (opts.json) process.stdout.write(`${JSON.stringify(job, null, 2)}\n`);
        else if (job.state === 'succeeded') process.stdout.write(`${escapeControl(`Updated: ${JSON.stringify(job.result)}`)}\n`);
        else process.stderr.write(`mailsvc: ${escapeControl(job.message, true)}\n`);
        if (job.state === 'failed') process.exitCode = 1;
      } finally {
        process.off('SIGINT', interrupt);
      }
    });

  readOnly(program, ['settings show', 'settings check-update']);
}
