import type { Command } from 'commander';
import type { Page } from '../../shared/paging.js';
import { output } from '../../shared/terminal/output.js';
import { day, pageNote, pageOf, pagingOptions, sortOption, table } from '../../shared/terminal/options.js';
import { readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { DomainView } from './schema.js';
import { DOMAIN_SORT } from './schema.js';
import type { DomainService } from './domain.service.js';

const describeDomain = (d: DomainView): string =>
  [
    `Domain ${d.name} (id ${d.id})`,
    `  active:   ${d.active ? 'yes' : 'no'}`,
    ...(d.accounts === undefined ? [] : [`  accounts: ${d.accounts}`, `  aliases:  ${d.aliases ?? 0}`]),
    `  created:  ${d.created_at}`,
    `  updated:  ${d.updated_at}`,
  ].join('\n');

/** `mailsvc add domain` and `mailsvc domains list|show|delete`. */
export function domainCommands(program: Command, run: Run<{ service: DomainService }>): void {
  program
    .command('add')
    .description('add a mail object (see: mailsvc add domain --help)')
    .command('domain')
    .description('add a domain this server receives mail for')
    .argument('<name>', 'the domain name, e.g. example.org (IDNs in punycode, xn--…)')
    .option('--generate-dkim', 'also make its DKIM keys and sign its mail with them (prints the records to publish)')
    .option('--json', 'print the result as JSON')
    .action(async (name: string, opts: { generateDkim?: boolean; json?: boolean }) => {
      const domain = await run((m) => (opts.generateDkim ? m.service.createWithDkim(name) : m.service.create(name)));
      output(opts.json, domain, () =>
        [
          `Domain ${domain.name} added (id ${domain.id}). Add accounts with: mailsvc accounts add user@${domain.name}`,
          ...(domain.dkim?.keys ?? []).map((k) => `DKIM selector ${k.selector}: publish\n  ${k.record_name}. IN TXT "${k.record_value}"`),
          ...(domain.dkim ? [`The whole DNS plan: mailsvc dns plan ${domain.name} <mail host>`] : []),
        ].join('\n'),
      );
    });

  const domains = program.command('domains').description('the domains this server receives mail for');

  sortOption(pagingOptions(domains.command('list').description('list the domains with their account and alias counts')), DOMAIN_SORT, 'name')
    .option('--search <text>', 'only the domains whose name contains this text')
    .option('--json', 'print the page as JSON ({ items, total, limit, offset })')
    .action(async (opts: Page & { json?: boolean; search?: string; sort?: string }) => {
      const page = await run((m) => m.service.list(pageOf(opts), { q: opts.search }, opts.sort));
      output(opts.json, page, () =>
        page.total === 0
          ? opts.search ? `No domain name contains "${opts.search}". Try a shorter part, or mailsvc domains list without --search` : 'No domains yet. Add one with: mailsvc add domain example.org'
          : table(
              ['name', 'id', 'active', 'accounts', 'aliases', 'created'],
              page.items.map((d) => [d.name, String(d.id), d.active ? 'yes' : 'no', String(d.accounts ?? 0), String(d.aliases ?? 0), day(d.created_at)]),
            ) + pageNote(page),
      );
    });

  domains
    .command('show')
    .description('show one domain')
    .argument('<domain>', 'its name or id')
    .option('--json', 'print it as JSON')
    .action(async (idOrName: string, opts: { json?: boolean }) => {
      const domain = await run((m) => m.service.get(idOrName));
      output(opts.json, domain, () => describeDomain(domain));
    });

  domains
    .command('delete')
    .description('delete a domain that holds no account and no alias; Rspamd stops signing for it and its DKIM keys are retired (through the root helper)')
    .argument('<domain>', 'its name or id')
    .option('--json', 'print the result as JSON')
    .action(async (idOrName: string, opts: { json?: boolean }) => {
      const name = await run(async (m) => {
        const { name } = await m.service.get(idOrName);
        await m.service.delete(idOrName);
        return name;
      });
      output(opts.json, { ok: true, deleted: name }, () => `Domain ${name} deleted.`);
    });
  readOnly(program, ['domains list', 'domains show']);
}
