import type { Command } from 'commander';
import { API_KEY_SCOPES } from '../route-types.js';
import { output } from '../../shared/terminal/output.js';
import { day, table } from '../../shared/terminal/options.js';
import { readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { ApiKeyService } from './api-key.service.js';
import { parseSpan } from '../../shared/time-span.js';

/** `mailsvc api-keys list|create|revoke`: scoped keys for automation (the host CLI runs as root and may make them). */
export function apiKeyCommands(program: Command, run: Run<{ service: ApiKeyService }>): void {
  const keys = program.command('api-keys').description('scoped API keys for scripts and monitoring (Authorization: Bearer <key>)');

  keys
    .command('create')
    .description('make an API key; it is printed once and cannot be shown again')
    .requiredOption('--name <name>', 'what it is for, e.g. "monitoring"')
    .requiredOption('--scopes <list>', `comma-separated: ${API_KEY_SCOPES.join(', ')}`)
    .requiredOption('--expires <when>', 'when it stops working, at most 366 days ahead: an ISO 8601 time (2027-01-31T00:00:00Z) or a span from now such as 30d, 12h, 2w')
    .option('--json', 'print it as JSON (the only place the key appears)')
    .action(async (opts: { name: string; scopes: string; expires: string; json?: boolean }) => {
      const scopes = opts.scopes.split(',').map((s) => s.trim()).filter(Boolean);
      // A span (30d) reads forward from now, as audit list --since reads one backward.
      const span = parseSpan(opts.expires);
      const expires = span === null ? opts.expires : new Date(Date.now() + span).toISOString();
      const created = await run((m) => m.service.create({ name: opts.name, scopes, expires_at: expires }, 'cli'));
      output(opts.json, created, () =>
        [
          `API key "${created.name}" (id ${created.id}), scopes ${created.scopes.join(', ')}, valid until ${created.expires_at}:`,
          '',
          `    ${created.key}`,
          '',
          'Store it now: it is kept only as a hash and will not be shown again. Send it as "Authorization: Bearer <key>".',
        ].join('\n'),
      );
    });

  keys
    .command('list')
    .description('list the API keys that are not revoked (never the keys themselves)')
    .option('--json', 'print them as JSON')
    .action(async (opts: { json?: boolean }) => {
      const items = await run((m) => m.service.list());
      output(opts.json, items, () =>
        items.length === 0
          ? 'No API keys. Make one with: mailsvc api-keys create --name "…" --scopes read --expires 2027-01-31T00:00:00Z'
          : table(
              ['id', 'name', 'scopes', 'created', 'expires', 'by', 'active'],
              items.map((k) => [k.id, k.name, k.scopes.join(','), day(k.created_at), day(k.expires_at), k.created_by, k.active ? 'yes' : 'no']),
            ),
      );
    });

  keys
    .command('revoke')
    .description('revoke an API key: refused at once by every instance')
    .argument('<id>', 'the key id (from the list; the part before the dot)')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      await run((m) => m.service.revoke(id));
      output(opts.json, { ok: true, revoked: id }, () => `API key ${id} revoked.`);
    });
  readOnly(program, ['api-keys list']);
}
