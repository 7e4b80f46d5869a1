import { AppError, badRequest } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import type { Page, Paged } from '../../shared/paging.js';
import { DIRECTIONS, MessageJoiner } from './collector.js';
import type { CollectWriter, Direction } from './collector.js';
import { headOf, isFile, logFiles, readChunks } from './log-files.js';
import type { LogFile, LogPosition } from './log-files.js';
import { JournalUnreadable, readJournal } from './journal.js';
import type { JournalPosition, JournalRead } from './journal.js';
import { LineScanner } from './postfix-log.js';
import type { Figures, Range, StatsRepository, WriterTuning } from './stats.repository.js';
import type { CollectResult, MailboxStats, StatsSummary, StatsTimeline } from './schema.js';
import { parseIsoTime } from '../../shared/iso-time.js';

const DAY = 86_400_000;

/** MAILSVC_MAIL_LOG's value that reads the journal even when a log file exists. */
export const JOURNAL = 'journal';

/**
 * The collector's saved state (`stats_collector`, one row of JSON). The file's
 * position and the journal's are kept apart: a host that gains or loses its
 * mail log file switches source and each resumes where it was. States saved
 * before the journal was read have no `journal` (read as null).
 */
type SavedState = {
  position: LogPosition | null;
  journal?: JournalPosition | null;
  pending: NonNullable<ConstructorParameters<typeof MessageJoiner>[0]>;
};

function parseState(raw: string | null | undefined): SavedState {
  if (!raw) return { position: null, journal: null, pending: {} };
  const s = JSON.parse(raw) as Partial<SavedState>;
  return { position: s.position ?? null, journal: s.journal ?? null, pending: s.pending ?? {} };
}

/** `done` of `total`, in bytes of log files or in milliseconds of the journal's time. */
export type CollectProgress = (done: number, total: number, unit: 'bytes' | 'ms') => void;

/** What one source's reading leaves for collect to finish. */
type Reading = {
  writer: CollectWriter;
  joiner: MessageJoiner;
  lines: number;
  files: string[];
  position: LogPosition | null;
  journal: CollectResult['journal'];
  journalPosition: JournalPosition | null;
};

/** The realtime (`t=`, microseconds in hex) a journal cursor carries, in ms; null when it has none. */
export function cursorTime(cursor: string): number | null {
  const m = /(?:^|;)t=([0-9a-f]+)(?:;|$)/.exec(cursor);
  return m?.[1] ? Math.floor(parseInt(m[1], 16) / 1000) : null;
}

export type RangeInput = { from?: string | undefined; to?: string | undefined; mailbox?: string | undefined; direction?: Direction | undefined };

function time(name: string, v: string): number {
  // A date alone is UTC midnight; a time without an offset is read as UTC too, never in the host's zone.
  const text = /^\d{4}-\d{2}-\d{2}T[\d:.]+$/.test(v) ? `${v}Z` : v;
  // parseIsoTime refuses a day that does not exist (2026-11-31): Date.parse would move it to 1 December.
  const t = parseIsoTime(text);
  if (t === null) throw badRequest(`${name} "${v.slice(0, 40)}" is not a real ISO 8601 date or time, e.g. 2026-01-31 or 2026-01-31T12:00:00Z`);
  return t;
}

const zero = (): Figures => ({ messages: 0, bytes: 0 });
const perDirection = () => ({ inbound: zero(), outbound: zero(), local: zero() });

export class StatsService {
  constructor(
    private readonly repo: StatsRepository,
    private readonly clock: Clock,
    private readonly mailLog: string,
    private readonly retentionDays: () => number,
    /** Thresholds of the SQLite writer (see StatsRepository.writer); tests lower them. */
    private readonly tuning: WriterTuning = {},
  ) {}

  /**
   * Reads what the log gained since the last run (and rotated files not read
   * yet), stores the completed messages, saves where it stopped, and applies
   * retention. Running it twice stores nothing twice. Without a log file
   * (neither it nor a rotation), or with MAILSVC_MAIL_LOG=journal, the
   * journal's mail lines are read instead (see journal.ts).
   */
  async collect(onProgress?: CollectProgress): Promise<CollectResult> {
    const raw = await this.repo.loadState();
    const saved = parseState(raw);
    const files = this.mailLog === JOURNAL ? [] : logFiles(this.mailLog);
    const read = files.length > 0 ? await this.readFiles(files, saved, onProgress) : await this.readJournal(saved, onProgress);
    if (read === null) {
      // Neither a file nor a journal (no journal files here): nothing is saved, the caller says what to set.
      return { files_read: [], journal: null, lines: 0, rows_added: 0, rows_pruned: await this.prune(), open_messages: Object.keys(saved.pending).length };
    }
    const now = this.clock.now();
    const pending = read.joiner.save(now);
    const state: SavedState = { position: read.position, journal: read.journalPosition, pending };
    const added = await read.writer.finish(JSON.stringify(state), now);
    const pruned = await this.prune();
    return { files_read: read.files, journal: read.journal, lines: read.lines, rows_added: added, rows_pruned: pruned, open_messages: Object.keys(pending).length };
  }

  private async readFiles(files: LogFile[], saved: SavedState, onProgress?: CollectProgress): Promise<Reading> {
    let start = 0;
    let offset = 0;
    if (saved.position) {
      // Newest first: the live file is the likeliest, then its rotations.
      for (let i = files.length - 1; i >= 0; i--) {
        const f = files[i];
        if (f && (await isFile(f, saved.position))) {
          start = i;
          offset = saved.position.offset;
          break;
        }
      }
      // Not found (rotated out of reach): everything there is gets read; stored rows are not counted twice.
    }
    // The bytes this run will read (a .gz file counted at 5 times its size), for the writer's bulk-load decision.
    const bytes = files.slice(start).reduce((n, f, k) => n + (f.gz ? f.stat.size * 5 : f.stat.size) - (k === 0 ? offset : 0), 0);
    const writer = await this.repo.writer(bytes, this.tuning);
    // The joiner hands each completed message's rows to the writer.
    const joiner = new MessageJoiner(saved.pending, (rows) => writer.push(rows));
    let lines = 0;
    let doneBytes = 0;
    const read: string[] = [];
    let position = saved.position;
    try {
      for (let i = start; i < files.length; i++) {
        const file = files[i];
        if (!file) continue;
        const from = i === start ? offset : 0;
        // The reference for year-less timestamps: the file's last change, which its last line is close to.
        const scanner = new LineScanner(file.stat.mtime);
        const end = await readChunks(file, from, (text, chunk) => {
          doneBytes += chunk.length;
          let a = 0;
          for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', a)) {
            lines++;
            scanner.scan(text, a, nl, chunk, joiner);
            a = nl + 1;
          }
        }, async () => {
          onProgress?.(Math.min(doneBytes, bytes), bytes, 'bytes');
          joiner.trim(joiner.lastAt);
          await writer.flush();
        });
        read.push(file.path);
        position = { ...(await headOf(file)), offset: end };
      }
    } catch (err) {
      await writer.abort();
      throw err;
    }
    return { writer, joiner, lines, files: read, position, journal: null, journalPosition: saved.journal ?? null };
  }

  private async readJournal(saved: SavedState, onProgress?: CollectProgress): Promise<Reading | null> {
    // How much a run will read is not known up front: the writer starts small (a bulk load still begins when rows pile up).
    const writer = await this.repo.writer(0, this.tuning);
    const joiner = new MessageJoiner(saved.pending, (rows) => writer.push(rows));
    const scanner = new LineScanner(new Date(this.clock.now()));
    const after = saved.journal ?? null;
    // Progress in time: from the saved entry (or the first line read) to now.
    let since = after ? cursorTime(after.cursor) : null;
    const now = this.clock.now();
    let got: JournalRead;
    try {
      got = await readJournal(after, {
        onLine: (line) => {
          const bytes = Buffer.from(line, 'utf8');
          const text = bytes.toString('latin1');
          scanner.scan(text, 0, text.length, bytes, joiner);
        },
        afterBatch: async () => {
          if (joiner.lastAt > 0) {
            since ??= joiner.lastAt;
            onProgress?.(Math.max(0, joiner.lastAt - since), Math.max(0, now - since), 'ms');
          }
          joiner.trim(joiner.lastAt);
          await writer.flush();
        },
      });
    } catch (err) {
      await writer.abort();
      if (err instanceof JournalUnreadable) throw new AppError('unavailable', err.message);
      throw err;
    }
    if (got.noJournal && got.lines === 0) {
      await writer.abort();
      return null;
    }
    return { writer, joiner, lines: got.lines, files: [], position: saved.position, journal: { from: got.from, lines: got.lines }, journalPosition: got.position };
  }

  /** Deletes rows older than the retention (`stats-retention-days`). */
  prune(): Promise<number> {
    return this.repo.deleteBefore(this.clock.now() - this.retentionDays() * DAY);
  }

  range(input: RangeInput): Range {
    const to = input.to === undefined ? this.clock.now() : time('to', input.to);
    const from = input.from === undefined ? to - 30 * DAY : time('from', input.from);
    if (from >= to) throw badRequest('from must be before to');
    if (input.direction !== undefined && !DIRECTIONS.includes(input.direction)) throw badRequest(`direction must be one of ${DIRECTIONS.join(', ')}`);
    return { from, to, direction: input.direction, mailbox: input.mailbox?.toLowerCase() };
  }

  private echo(r: Range) {
    return { from: new Date(r.from).toISOString(), to: new Date(r.to).toISOString(), mailbox: r.mailbox ?? null, direction: r.direction ?? null };
  }

  async summary(input: RangeInput): Promise<StatsSummary> {
    const r = this.range(input);
    const out = { ...this.echo(r), total: zero(), ...perDirection() };
    for (const d of await this.repo.byDirection(r)) {
      if (!DIRECTIONS.includes(d.direction as Direction)) continue;
      out[d.direction as Direction] = { messages: d.messages, bytes: d.bytes };
      out.total.messages += d.messages;
      out.total.bytes += d.bytes;
    }
    return out;
  }

  async mailboxes(input: RangeInput, page: Page): Promise<Paged<MailboxStats>> {
    const r = this.range(input);
    const { total, rows } = await this.repo.byMailbox(r, page.limit, page.offset);
    const items = new Map<string, MailboxStats>();
    for (const row of rows) {
      const item = items.get(row.mailbox) ?? { mailbox: row.mailbox, ...perDirection() };
      if (DIRECTIONS.includes(row.direction as Direction)) item[row.direction as Direction] = { messages: row.messages, bytes: row.bytes };
      items.set(row.mailbox, item);
    }
    return { items: [...items.values()], total, ...page };
  }

  async timeline(input: RangeInput & { bucket?: 'hour' | 'day' | undefined }): Promise<StatsTimeline> {
    const r = this.range(input);
    const bucket = input.bucket ?? (r.to - r.from <= 2 * DAY ? 'hour' : 'day');
    const width = bucket === 'hour' ? 3_600_000 : DAY;
    if ((r.to - r.from) / width > 10_000) throw badRequest(`the range holds more than 10000 ${bucket}s: narrow it or use bucket=day`);
    const items = new Map<number, StatsTimeline['items'][number]>();
    for (const b of await this.repo.byBucket(r, width)) {
      const item = items.get(b.start) ?? { time: new Date(b.start).toISOString(), ...perDirection() };
      if (DIRECTIONS.includes(b.direction as Direction)) item[b.direction as Direction] = { messages: b.messages, bytes: b.bytes };
      items.set(b.start, item);
    }
    return { ...this.echo(r), bucket, items: [...items.values()] };
  }
}
