import { humanBytes } from './human.js';
import { createInterface } from 'node:readline/promises';
import { InvalidArgumentError } from 'commander';
import type { Command } from 'commander';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../paging.js';
import type { Page } from '../paging.js';
import { CliError } from './output.js';
import { askHidden, readStdinLine } from './prompt.js';

/** A whole number in [min, max], for an option's argParser (commander reports it as invalid). */
export function wholeNumber(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`Use a whole number from ${min} to ${max}.`);
    }
    return n;
  };
}

const SIZE_UNITS = { '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 } as const;

/** Bytes, or a size with a binary suffix as Dovecot reads quotas: 512M, 2G, 1T (also 2GB, 2GiB). */
export function byteSize(max: number): (value: string) => number {
  return (value) => {
    const m = /^(\d+)\s*([KMGT]?)(?:I?B)?$/i.exec(value.trim());
    const unit = SIZE_UNITS[(m?.[2] ?? '').toUpperCase() as keyof typeof SIZE_UNITS];
    const n = Number(m?.[1]) * unit;
    if (!m || !Number.isSafeInteger(n) || n > max) {
      throw new InvalidArgumentError(`Use bytes or a size such as 512M, 2G, 1T, from 0 (no quota) up to ${asTyped(max)}.`);
    }
    return n;
  };
}

export function yesNo(value: string): boolean {
  const v = value.trim().toLowerCase();
  if (v === 'yes' || v === 'true') return true;
  if (v === 'no' || v === 'false') return false;
  throw new InvalidArgumentError('Use yes or no.');
}

/** --limit and --offset on a list command. */
export function pagingOptions(cmd: Command): Command {
  return cmd
    .option('--limit <n>', `how many to show (1 to ${MAX_LIMIT})`, wholeNumber(1, MAX_LIMIT), DEFAULT_LIMIT)
    .option('--offset <n>', 'how many to skip', wholeNumber(0, Number.MAX_SAFE_INTEGER), 0);
}

/** --sort on a list command: the same values as the route's `sort` (checked by the service, exit 2 naming them). */
export function sortOption(cmd: Command, fields: readonly string[], byDefault: string): Command {
  return cmd.option('--sort <field>', `order by ${fields.join(', ')} (-<field> for descending, e.g. --sort=-${fields[0] ?? ''}); default ${byDefault}`);
}

export const pageOf = (opts: Page): Page => ({ limit: opts.limit, offset: opts.offset });

/** "Showing 51-100 of 230; --offset 100 for more", or nothing when the page holds everything. */
export function pageNote(p: { items: unknown[]; total: number; offset: number }): string {
  if (p.offset === 0 && p.items.length >= p.total) return '';
  if (p.items.length === 0) return `\nNothing at --offset ${p.offset}: there are ${p.total}`;
  const more = p.offset + p.items.length < p.total ? `; --offset ${p.offset + p.items.length} for more` : '';
  return `\nShowing ${p.offset + 1}-${p.offset + p.items.length} of ${p.total}${more}`;
}

/** A size as it is typed (512M, 1024T): for a message about what to type, not for showing a size. */
function asTyped(n: number): string {
  for (const u of ['T', 'G', 'M', 'K'] as const) if (n > 0 && n % SIZE_UNITS[u] === 0) return `${n / SIZE_UNITS[u]}${u}`;
  return String(n);
}

/** A size for people: the one format (human.ts), "26.6 KiB". */
export const formatBytes = (n: number): string => humanBytes(n);

export const day = (iso: string | null): string => (iso === null ? '-' : iso.slice(0, 10));

/** Columns padded to their widest cell, a header row in capitals. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...rows.map(line)].join('\n');
}

/** A new mailbox password: the first stdin line with --password-stdin, else asked twice without echo. */
export async function readNewPassword(fromStdin: boolean | undefined, whose: string): Promise<string> {
  if (fromStdin) return readStdinLine();
  if (!process.stdin.isTTY) throw new CliError('no terminal to ask for the password on: pass --password-stdin and pipe the password', 2);
  const password = await askHidden(`New password for ${whose}: `);
  const again = await askHidden('Repeat it: ');
  if (again !== password) throw new CliError('the two passwords differ; nothing was changed', 2);
  return password;
}

/** Confirmation for a destructive command: --yes, else a y/N question on a terminal, else a refusal. */
export async function confirm(yes: boolean | undefined, question: string, refusal: string): Promise<void> {
  if (yes) return;
  if (!process.stdin.isTTY) throw new CliError(`${refusal}: pass --yes to confirm (no terminal to ask on)`, 2);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${question} [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) throw new CliError('cancelled; nothing was changed', 1);
  } finally {
    rl.close();
  }
}
