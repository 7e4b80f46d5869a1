import type { Command } from 'commander';
import type { Page } from '../../shared/paging.js';
import { output } from '../../shared/terminal/output.js';
import { pageNote, pageOf, pagingOptions, sortOption, table } from '../../shared/terminal/options.js';
import { readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { AliasService } from './alias.service.js';
import { ALIAS_SORT } from './schema.js';

/** `mailsvc aliases add|list|delete`: addresses (or @domain catch-alls) that forward. */
export function aliasCommands(program: Command, run: Run<{ service: AliasService }>): void {
  const aliases = program.command('aliases').description('addresses that forward to other addresses');

  aliases
    .command('add')
    .description('make <source> forward to one or more addresses')
    .argument('<source>', 'an address, or @example.org for a catch-all (its domain must exist)')
    .argument('<destination...>', 'where mail goes (space- or comma-separated)')
    .option('--json', 'print the alias as JSON')
    .action(async (source: string, destinations: string[], opts: { json?: boolean }) => {
      const list = destinations.flatMap((d) => d.split(',')).map((d) => d.trim()).filter((d) => d !== '');
      const alias = await run((m) => m.service.create({ source, destinations: list }));
      output(opts.json, alias, () => `Alias ${alias.source} → ${alias.destinations.join(', ')} added (id ${alias.id}).`);
    });

  sortOption(pagingOptions(aliases.command('list').description('list the aliases, by source')), ALIAS_SORT, 'source')
    .option('--domain <domain>', 'only the aliases of this domain (name or id)')
    .option('--search <text>', 'only the aliases whose source or a destination contains this text')
    .option('--json', 'print the page as JSON ({ items, total, limit, offset })')
    .action(async (opts: Page & { domain?: string; search?: string; json?: boolean; sort?: string }) => {
      const page = await run((m) => m.service.list({ domain: opts.domain, q: opts.search }, pageOf(opts), opts.sort));
      output(opts.json, page, () =>
        page.total === 0
          ? opts.search !== undefined ? `No alias source or destination contains "${opts.search}". Try a shorter part, or mailsvc aliases list without --search` : 'No aliases. Add one with: mailsvc aliases add info@example.org alice@example.org'
          : table(
              ['source', 'destinations', 'id', 'active'],
              page.items.map((a) => [a.source, a.destinations.join(', '), String(a.id), a.active ? 'yes' : 'no']),
            ) + pageNote(page),
      );
    });

  aliases
    .command('delete')
    .description('delete an alias')
    .argument('<alias>', 'its source address or id')
    .option('--json', 'print the result as JSON')
    .action(async (idOrSource: string, opts: { json?: boolean }) => {
      const source = await run(async (m) => {
        const { source } = await m.service.get(idOrSource);
        await m.service.delete(idOrSource);
        return source;
      });
      output(opts.json, { ok: true, deleted: source }, () => `Alias ${source} deleted.`);
    });
  readOnly(program, ['aliases list']);
}
