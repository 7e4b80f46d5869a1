import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A stand-in for `journalctl` on PATH, for tests of the logic around the
 * journal reader (positions, a vacuumed cursor, errors), not of the journal.
 * It keeps a list of entries, each with a cursor whose `i=` is its sequence
 * number; like journalctl it prints, for the mail facility and
 * `-o short-iso-precise` only, the entries from `--cursor=` (the first one at
 * or after its sequence number: the entry itself or, when vacuumed, the next)
 * and then `-- cursor: <last printed>`. `mode` plays the failures journalctl
 * has on a real host. Each call's arguments are recorded.
 */

export type FakeJournalMode = 'ok' | 'denied' | 'denied-hint' | 'no-files';
export type FakeEntry = { seq: number; line: string };

const SCRIPT = (state: string) => `#!${process.execPath}
const fs = require('node:fs');
const st = JSON.parse(fs.readFileSync(${JSON.stringify(state)}, 'utf8'));
const args = process.argv.slice(2);
fs.appendFileSync(${JSON.stringify(`${state}.calls`)}, JSON.stringify(args) + '\\n');
const out = (s) => process.stdout.write(s + '\\n');
if (st.mode === 'denied') { process.stderr.write('No journal files were opened due to insufficient permissions.\\n'); process.exit(1); }
if (st.mode === 'no-files') { process.stderr.write('No journal files were found.\\n'); out('-- No entries --'); process.exit(0); }
const want = ['--no-pager', '--utc', '--output=short-iso-precise', '--show-cursor', 'SYSLOG_FACILITY=2'];
if (!want.every((a) => args.includes(a))) { process.stderr.write('fake journalctl: unexpected arguments ' + args.join(' ') + '\\n'); process.exit(2); }
let entries = st.entries;
const at = args.find((a) => a.startsWith('--cursor='));
if (at) {
  const m = /;i=([0-9a-f]+);/.exec(at);
  if (!m) { process.stderr.write('Failed to seek to cursor: Invalid argument\\n'); process.exit(1); }
  entries = entries.filter((e) => e.seq >= parseInt(m[1], 16));
}
if (st.mode === 'denied-hint') {
  process.stderr.write("Hint: You are currently not seeing messages from other users and the system.\\n      Users in groups 'adm', 'systemd-journal' can see all messages.\\n");
  entries = [];
}
if (entries.length === 0) out('-- No entries --');
for (const e of entries) out(e.line);
const last = entries[entries.length - 1];
// A real cursor's shape: t= is the entry's time in microseconds (hex).
if (last) out('-- cursor: s=5f9f25dd0c384a1c8f3fa3525dcd67a7;i=' + last.seq.toString(16) + ';b=b52dee8737274f4aa947a801b2ac4457;m=1;t=' + (Date.parse(last.line.slice(0, 26) + 'Z') * 1000).toString(16) + ';x=0');
`;

export class FakeJournalctl {
  /** A directory holding only `journalctl`: put it first on PATH. */
  readonly dir = mkdtempSync(join(tmpdir(), 'mailsvc-fake-journalctl-'));
  private readonly state = join(this.dir, 'state.json');
  entries: FakeEntry[] = [];
  mode: FakeJournalMode = 'ok';
  private seq = 0x100;

  constructor() {
    writeFileSync(join(this.dir, 'journalctl'), SCRIPT(this.state));
    chmodSync(join(this.dir, 'journalctl'), 0o755);
    this.save();
  }

  /** Appends lines (in short-iso-precise form) as new entries. */
  append(lines: readonly string[]): void {
    for (const line of lines) this.entries.push({ seq: this.seq++, line });
    this.save();
  }

  /** Drops the oldest `n` entries, as `journalctl --vacuum-*` would. */
  vacuum(n: number): void {
    this.entries = this.entries.slice(n);
    this.save();
  }

  setMode(mode: FakeJournalMode): void {
    this.mode = mode;
    this.save();
  }

  /** The argument lists of the calls so far. */
  calls(): string[][] {
    const f = `${this.state}.calls`;
    return existsSync(f) ? readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as string[]) : [];
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private save(): void {
    writeFileSync(this.state, JSON.stringify({ mode: this.mode, entries: this.entries }));
  }
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A classic syslog log's lines as `journalctl --utc -o short-iso-precise` prints them (their time read as UTC in `year`). */
export function asJournalLines(log: string, year: number): string[] {
  return log.split('\n').filter(Boolean).map((l) =>
    l.replace(/^(\w{3}) +(\d+) (\d\d):(\d\d):(\d\d) /, (_all, mon: string, d: string, h: string, mi: string, s: string) => {
      const iso = new Date(Date.UTC(year, MONTHS.indexOf(mon), Number(d), Number(h), Number(mi), Number(s))).toISOString().slice(0, 19);
      return `${iso}.000000+0000 `;
    }),
  );
}
