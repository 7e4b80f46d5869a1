import { createHash } from 'node:crypto';
import { ExecError } from '../../adapters/exec.js';
import { execLines } from '../../adapters/exec-lines.js';

/**
 * Postfix's lines from the systemd journal, for hosts without a mail log
 * file (Debian 12 installs no rsyslog). `journalctl` is run as a program (no
 * library: it is the journal's own reader, present wherever the journal is,
 * and reading the journal files directly would tie us to their format).
 *
 * Which entries: `SYSLOG_FACILITY=2` (mail), what rsyslog's `mail.*` put into
 * /var/log/mail.log. It covers Postfix whatever its unit (`postfix@-.service`
 * on Debian, `postfix.service`, `postfix@<instance>`) and whatever its syslog
 * name (`postfix/submission/smtpd`, a second instance's `postfix-out/smtp`),
 * and lines the journal could not tie to a unit (a process gone before
 * journald looked at it). Matching units or `SYSLOG_IDENTIFIER`s would each
 * miss some of these; Dovecot's mail-facility lines come along and are skipped
 * by the scanner as they were in mail.log.
 *
 * Where it stopped: the journal's cursor of the last entry read, and a hash of
 * that line. The next run starts AT the cursor (`--cursor`), not after it: the
 * first line is skipped when it is the one read last. `--after-cursor` is not
 * used because, when the entry was vacuumed, journalctl seeks to the next one
 * and still skips it (systemd 252), losing a line; with `--cursor` a vacuumed
 * position is seen (the first line is another) and nothing is skipped.
 */

/** Where the collector stopped in the journal. */
export type JournalPosition = {
  /** journalctl's cursor of the last entry read. */
  cursor: string;
  /** SHA-256 of that entry's line (not the line: it may hold a remote address). */
  last: string;
};

/** How a run started: at the journal's oldest entry, after the saved entry, or where it was once the saved entry had been vacuumed. */
export type JournalStart = 'beginning' | 'cursor' | 'cursor-gone';

export type JournalRead = {
  /** Where to start next time (the old one when nothing new was read). */
  position: JournalPosition | null;
  /** Log lines read (journalctl's own `-- … --` lines not counted). */
  lines: number;
  from: JournalStart;
  /** journalctl found no journal files at all (no journald here, or it keeps none). */
  noJournal: boolean;
};

/** Why the journal could not be read: journalctl missing, not allowed to read the system journal, or failing. */
export class JournalUnreadable extends Error {
  constructor(
    readonly reason: 'missing' | 'permission' | 'failed',
    message: string,
  ) {
    super(message);
    this.name = 'JournalUnreadable';
  }
}

/** The entries read: mail facility, in the journal's order. */
export const JOURNAL_MATCH = 'SYSLOG_FACILITY=2';
const CURSOR_LINE = '-- cursor: ';
const PERMISSION = /insufficient permissions|not seeing messages from other users/i;
const NO_FILES = /No journal files were found/i;

export const lineHash = (line: string): string => createHash('sha256').update(line).digest('hex');

export type JournalReadOptions = {
  /** Gets each log line (journalctl's `-- … --` lines are not passed). */
  onLine: (line: string) => void;
  /** Runs after every `batchLines` lines, and reading waits for it (the writer's flush). */
  afterBatch?: () => Promise<void>;
  batchLines?: number;
  /** The whole run's time limit (default 30 minutes: a first run may read months of mail). */
  timeoutMs?: number;
};

/** The journalctl arguments: the mail facility from `after` (or the beginning), RFC 3339-like UTC stamps, the last cursor. */
export function journalArgs(after: JournalPosition | null): string[] {
  return ['--no-pager', '--utc', '--output=short-iso-precise', '--show-cursor', ...(after ? [`--cursor=${after.cursor}`] : []), JOURNAL_MATCH];
}

/** Reads the journal's mail lines from `after` (everything there is when null). */
export async function readJournal(after: JournalPosition | null, opts: JournalReadOptions): Promise<JournalRead> {
  try {
    return await readFrom(after, opts);
  } catch (err) {
    // A cursor journalctl cannot seek to (from another machine, or damaged state): everything there is is read.
    if (after && err instanceof ExecError && err.kind === 'exit' && /seek to cursor/i.test(err.stderr)) {
      return { ...(await readFrom(null, opts)), from: 'cursor-gone' };
    }
    throw explain(err);
  }
}

async function readFrom(after: JournalPosition | null, opts: JournalReadOptions): Promise<JournalRead> {
  const batch = opts.batchLines ?? 10_000;
  let cursor: string | null = null;
  let lastLine: string | null = null;
  let lines = 0;
  let first = true;
  let from: JournalStart = after ? 'cursor' : 'beginning';
  let noJournal = false;
  let denied: string | null = null;
  const onStderrLine = (l: string): void => {
    if (PERMISSION.test(l)) denied ??= l.trim();
    if (NO_FILES.test(l)) noJournal = true;
  };
  for await (const line of execLines('journalctl', journalArgs(after), { timeoutMs: opts.timeoutMs ?? 30 * 60_000, onStderrLine })) {
    if (line.startsWith('-- ')) {
      if (line.startsWith(CURSOR_LINE)) cursor = line.slice(CURSOR_LINE.length).trim();
      continue;
    }
    if (first && after) {
      first = false;
      // The entry the last run ended with: read already.
      if (lineHash(line) === after.last) continue;
      from = 'cursor-gone';
    }
    first = false;
    lines++;
    lastLine = line;
    opts.onLine(line);
    if (lines % batch === 0 && opts.afterBatch) await opts.afterBatch();
  }
  // journalctl exits 0 when it may read only the user's own journal: reading nothing would look like no mail.
  if (denied !== null) throw new JournalUnreadable('permission', permissionMessage(denied));
  // No entry printed (nothing at or after the cursor): the saved entry is gone, and the old position stays.
  if (after && first) from = 'cursor-gone';
  const position = cursor !== null && lastLine !== null ? { cursor, last: lineHash(lastLine) } : after;
  return { position, lines, from, noJournal };
}

function permissionMessage(stderr: string): string {
  // journalctl's hint around it is long: its verdict is enough.
  const said = /No journal files were opened due to insufficient permissions\.?/i.exec(stderr)?.[0] ?? stderr.split(' | ')[0]?.trim() ?? stderr;
  return `cannot read the systemd journal as this user (journalctl: ${said}): run it as a user in group adm or systemd-journal (mailsvc-stats.service has SupplementaryGroups=adm systemd-journal), or set MAILSVC_MAIL_LOG to a Postfix log file it can read`;
}

function explain(err: unknown): unknown {
  if (!(err instanceof ExecError)) return err;
  if (err.kind === 'not-found') {
    return new JournalUnreadable('missing', 'journalctl is not installed here, and there is no mail log file to read instead: set MAILSVC_MAIL_LOG to the Postfix log file (e.g. Postfix\'s maillog_file, or rsyslog\'s /var/log/mail.log)');
  }
  if (err.kind === 'exit' && PERMISSION.test(err.stderr)) return new JournalUnreadable('permission', permissionMessage(err.stderr));
  return new JournalUnreadable('failed', `reading the systemd journal failed (${err.message}): check journalctl works (journalctl ${JOURNAL_MATCH} -n 5), or set MAILSVC_MAIL_LOG to the Postfix log file`);
}
