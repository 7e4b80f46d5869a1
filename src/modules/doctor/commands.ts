import type { Command } from 'commander';
import { CliError, output } from '../../shared/terminal/output.js';
import { readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { DoctorService } from './doctor.service.js';
import { exitCode } from './run.js';
import type { DoctorReport } from './schema.js';

const MARK = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL', unknown: '????' } as const;

/** The summary line first, then one line per check (failing and warning ones with their fix). */
export function doctorText(r: DoctorReport): string {
  const width = Math.max(...r.checks.map((c) => c.name.length), 10);
  const lines = r.checks.flatMap((c) => [
    `${MARK[c.status]}  ${c.name.padEnd(width)}  ${c.detail}`,
    ...(c.fix && c.status !== 'ok' && c.status !== 'unknown' ? [`${' '.repeat(width + 8)}fix: ${c.fix}`] : []),
  ]);
  const unknown = r.counts.unknown > 0 && r.status !== 'unknown' ? ` (${r.counts.unknown} could not be checked)` : '';
  return [`${r.summary}${unknown}`, ...lines].join('\n');
}

/** `mailsvc doctor [--json]`: exit 0 all ok (warnings allowed), 1 a check fails, 69 nothing could be checked. */
export function doctorCommands(program: Command, run: Run<{ service: DoctorService }>): void {
  program
    .command('doctor')
    .description("the host's status, checked: daemons, drift, timers, backups, DNS, disk, certificates, sockets, clock; exit 1 when a check fails, 69 when none could be checked")
    .option('--json', 'print the report as GET /admin/doctor answers it')
    .action(async (opts: { json?: boolean }) => {
      const r = await run((m) => m.service.run());
      output(opts.json, r, () => doctorText(r));
      const code = exitCode(r);
      if (code !== 0) throw new CliError(r.summary, code);
    });
  readOnly(program, ['doctor']);
}
