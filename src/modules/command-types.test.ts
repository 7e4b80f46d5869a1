import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { isAudited, notAudited, notAuditedBecause, readOnly, READS_ONLY } from './command-types.js';

function program(): Command {
  const p = new Command('mailsvc');
  const notes = p.command('notes');
  for (const name of ['add', 'list', 'purge']) notes.command(name).action(() => undefined);
  return p;
}
const at = (p: Command, path: string): Command => path.split(' ').reduce((c: Command, n) => c.commands.find((x) => x.name() === n) as Command, p);

describe('which commands the audit log records', () => {
  it('a command is recorded unless its module says otherwise; a group of commands is not a command that runs', () => {
    const p = program();
    readOnly(p, ['notes list']);
    notAudited(p, ['notes purge'], 'drops only what the retention drops anyway');
    expect(isAudited(at(p, 'notes add'))).toBe(true);
    expect(notAuditedBecause(at(p, 'notes add'))).toBeUndefined();
    expect(isAudited(at(p, 'notes list'))).toBe(false);
    expect(notAuditedBecause(at(p, 'notes list'))).toBe(READS_ONLY);
    expect(notAuditedBecause(at(p, 'notes purge'))).toBe('drops only what the retention drops anyway');
    expect(isAudited(at(p, 'notes'))).toBe(false);
  });

  it('a mark on a command that does not exist, or on a group, is a mistake said at once', () => {
    const p = program();
    expect(() => readOnly(p, ['notes show'])).toThrow('no command "notes show" to mark as not audited');
    expect(() => readOnly(p, ['notes'])).toThrow('"notes" is a group of commands: mark its commands');
  });
});
