import type { Command } from 'commander';
import { CliError, output } from '../../shared/terminal/output.js';
import { formatBytes, table } from '../../shared/terminal/options.js';
import { plural } from '../../shared/terminal/human.js';
import { commandGroup, readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { ReportItem, ReportService } from './report.service.js';

/** The figures of an item worth a column, as short text. */
function summary(i: ReportItem): string {
  const x = i as Record<string, unknown>;
  const parts: string[] = [];
  if (typeof x.version === 'string') parts.push(`version ${x.version}`);
  if (typeof x.total === 'number') parts.push(`${plural(x.total, 'message')}, limit ${String(x.limit)}`);
  if (typeof x.bytes === 'number') parts.push(formatBytes(x.bytes));
  if (x.rows && typeof x.rows === 'object') parts.push(Object.entries(x.rows).map(([k, v]) => `${k} ${String(v)}`).join(', '));
  if (typeof x.used_memory_bytes === 'number') parts.push(`memory ${formatBytes(x.used_memory_bytes)}, ${plural(Number(x.connected_clients), 'client')}, ${plural(Number(x.commands_processed), 'command')}`);
  if (Array.isArray(x.file_systems)) parts.push((x.file_systems as Array<{ path: string; used_percent: number }>).map((f) => `${f.path} ${f.used_percent} %`).join(', '));
  if (typeof x.available_bytes === 'number') parts.push(`${String(x.used_percent)} % used, ${formatBytes(x.available_bytes)} available`);
  if (typeof x.scanned === 'number') parts.push(`${x.scanned} scanned`);
  if (i.detail) parts.push(i.detail);
  return parts.join('; ');
}

/** `mailsvc report performance` and `mailsvc topology show`. */
export function reportCommands(program: Command, run: Run<{ service: ReportService }>): void {
  commandGroup(program, 'report', 'reports on the mail host')
    .command('performance')
    .description('service states, queue, mail storage, database, cache, disk, memory and spam filter; exit 1 when something is flagged')
    .option('--json', 'print the report as JSON')
    .action(async (opts: { json?: boolean }) => {
      const r = await run((m) => m.service.performance());
      output(opts.json, r, () => table(['item', 'status', 'flag', 'figures'], r.items.map((i) => [i.name, i.status, i.flagged ? 'FLAGGED' : '', summary(i)])));
      if (r.flagged.length > 0) throw new CliError(`flagged: ${r.flagged.join(', ')}`, 1);
    });

  commandGroup(program, 'topology', 'what mailsvc runs on and talks to')
    .command('show')
    .description('the API instances (from their Redis heartbeats) and the components with address, version and reachability')
    .option('--json', 'print the topology as JSON')
    .action(async (opts: { json?: boolean }) => {
      const t = await run((m) => m.service.topology());
      output(opts.json, t, () =>
        table(['component', 'status', 'address', 'version', 'detail'], t.components.map((c) => [c.name, c.status, c.address ?? '', c.version ?? '', c.detail ?? ''])) +
        '\n\n' +
        (t.instances.length === 0
          ? 'No API instance seen (none running with Redis, or MAILSVC_REDIS_URL unset).'
          : table(['instance', 'address', 'version', 'last heartbeat', 'reachable'], t.instances.map((i) => [i.id, i.address, i.version, i.last_seen, i.reachable ? 'yes' : 'no']))),
      );
    });
  readOnly(program, ['report performance', 'topology show']);
}
