import type { Command } from 'commander';
import { escapeControl, output } from '../../shared/terminal/output.js';
import { readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { NoteService } from './note.service.js';

/** `mailsvc notes add|list|delete`. Loaded for `--help`: only light code here; the service arrives through `run`. */
export function noteCommands(program: Command, run: Run<{ service: NoteService }>): void {
  const notes = program.command('notes').description("an administrator's notes about a domain");
  notes
    .command('add')
    .description('add a note to a domain')
    .argument('<domain>', 'its name or id')
    .argument('<text>', 'the note, 1 to 500 characters')
    .option('--json', 'print the note as JSON')
    .action(async (domain: string, text: string, opts: { json?: boolean }) => {
      const note = await run((m) => m.service.add(domain, text));
      output(opts.json, note, () => `Note ${note.id} added to ${note.domain}.`);
    });
  notes
    .command('list')
    .description("a domain's notes, oldest first")
    .argument('<domain>', 'its name or id')
    .option('--json', 'print them as JSON')
    .action(async (domain: string, opts: { json?: boolean }) => {
      const list = await run((m) => m.service.list(domain));
      output(opts.json, list, () => (list.length === 0 ? 'No notes.' : list.map((n) => `${n.id}  ${n.created_at.slice(0, 10)}  ${escapeControl(n.text, true)}`).join('\n')));
    });
  notes
    .command('delete')
    .description('delete one note of a domain')
    .argument('<domain>', 'its name or id')
    .argument('<id>', 'the note id (notes list shows it)')
    .option('--json', 'print the result as JSON')
    .action(async (domain: string, id: string, opts: { json?: boolean }) => {
      await run((m) => m.service.remove(domain, id));
      output(opts.json, { ok: true, deleted: Number(id) }, () => `Note ${id} deleted.`);
    });
  // Every other command is recorded in the audit log (audited by default).
  readOnly(program, ['notes list']);
}
