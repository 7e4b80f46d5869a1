import type { Command } from 'commander';
import { output } from '../../shared/terminal/output.js';
import { table } from '../../shared/terminal/options.js';
import { limitSpec } from '../../shared/limit-keys.js';
import { readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { LimitsService } from './limits.service.js';
import { ignoredMessage } from './limits.service.js';
import type { ApplyReport, LimitRow } from './schema.js';

type Deps = { service: LimitsService; show(): Promise<LimitRow[]>; apply(): Promise<ApplyReport> };

const applied = (r: ApplyReport): string =>
  [
    ...r.daemons.map((d) => `${d.daemon}: ${d.status === 'skipped' ? `skipped (${d.detail})` : d.detail}`),
    `Done in ${(r.milliseconds / 1000).toFixed(1)} s.`,
  ].join('\n');

/** `mailsvc limits show|set|apply`. */
export function limitCommands(program: Command, run: Run<Deps>): void {
  const limits = program.command('limits').description('service, mail and fail2ban limits: sizes, rates, spam scores, ban thresholds');

  limits
    .command('show')
    .description('every limit with its default, the value the daemon really runs with, and DRIFT where they differ')
    .option('--json', 'print the limits as GET /admin/limits answers them: one object, a key per limit')
    .action(async (opts: { json?: boolean }) => {
      // --json is the route's shape, byte for byte; the table adds the defaults, what is in force and the drift.
      if (opts.json) {
        output(true, await run((m) => m.service.refresh()), () => '');
        return;
      }
      const { rows, ignored } = await run(async (m) => ({ rows: await m.show(), ignored: m.service.ignored() }));
      output(false, rows, () => {
        const drifting = rows.filter((r) => r.drift).length;
        return [
          table(
            ['key', 'value', 'default', 'in force', 'unit', ''],
            rows.map((r) => [r.key, String(r.value), String(r.default), r.in_force === null ? '-' : String(r.in_force), r.unit, r.drift ? 'DRIFT' : ignored.some((i) => i.key === r.key) ? 'IGNORED' : '']),
          ),
          drifting ? `\n${drifting} limit(s) differ from what is in force: run mailsvc limits apply` : '',
          ...ignored.map((i) => `\nNote: ${ignoredMessage(i)}`),
        ].join('');
      });
    });

  limits
    .command('set')
    .description('change one limit (stored; the service uses it at once, daemons after limits apply)')
    .argument('<key>', `a limit key, e.g. message-size-limit (see limits show)`)
    .argument('<value>', 'a number; sizes also 50M, durations also 30s, 10m, 4h, 1d, 1w')
    .option('--json', 'print every limit as JSON afterwards')
    .action(async (key: string, value: string, opts: { json?: boolean }) => {
      const values = await run((m) => m.service.update({ [key]: value }));
      const daemons = (limitSpec(key)?.appliesTo ?? []).filter((t) => t !== 'service');
      output(opts.json, values, () =>
        `${key} = ${values[key]}.${daemons.length ? ` Run mailsvc limits apply to render it to ${daemons.join(', ')}.` : ' The service uses it from now on.'}`,
      );
    });

  limits
    .command('apply')
    .description('render Postfix, Rspamd, Dovecot and fail2ban with the limits, check each, reload the running ones; any failure restores every file')
    .option('--json', 'print the report as JSON')
    .action(async (opts: { json?: boolean }) => {
      if (!opts.json) process.stderr.write('Rendering and checking Postfix, Rspamd, Dovecot and fail2ban…\n');
      const report = await run((m) => m.apply());
      output(opts.json, report, () => applied(report));
    });

  readOnly(program, ['limits show']);
}
