/** How far a job got: a fraction from 0 to 1 and what it does now (a job's update, or the job record at its end). */
type JobUpdate = { progress: number; message: string };

/** Shows a foreground job's progress (a bar on a terminal, lines otherwise) and ends its display. */
export type ProgressView = { update(u: JobUpdate): void; end(job: JobUpdate): void };

const BAR_WIDTH = 30;
/** Redraws of the bar at most this often: a fast job must not flood the terminal. */
const REDRAW_MS = 100;

type Out = { isTTY?: boolean; columns?: number; write(s: string): unknown };

const percent = (f: number): string => `${String(Math.floor(f * 100)).padStart(3)}%`;

/**
 * A foreground job's progress on stderr (stdout keeps only the result, so
 * `--json` stays parseable): a bar redrawn in place on a terminal; otherwise
 * plain lines, one per 10 % reached or per change of message.
 */
export function progressView(out: Out = process.stderr, now: () => number = Date.now): ProgressView {
  if (out.isTTY) {
    let lastDraw = 0;
    let drawn = false;
    const draw = (u: JobUpdate): void => {
      const filled = Math.round(u.progress * BAR_WIDTH);
      const line = `[${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${percent(u.progress)} ${u.message}`;
      const width = Math.max(20, (out.columns ?? 80) - 1);
      out.write(`\r${line.slice(0, width).padEnd(width)}`);
      drawn = true;
    };
    return {
      update(u) {
        const t = now();
        if (t - lastDraw < REDRAW_MS && u.progress < 1) return;
        lastDraw = t;
        draw(u);
      },
      end(job: JobUpdate) {
        draw({ progress: job.progress, message: job.message });
        if (drawn) out.write('\n');
      },
    };
  }
  let decile = -1;
  let message: string | undefined;
  const line = (u: JobUpdate): void => void out.write(`[${percent(u.progress)}] ${u.message}\n`);
  return {
    update(u) {
      const d = Math.floor(u.progress * 10);
      if (d > decile || u.message !== message) {
        decile = Math.max(decile, d);
        message = u.message;
        line(u);
      }
    },
    end(job: JobUpdate) {
      if (job.message !== message) line({ progress: job.progress, message: job.message });
    },
  };
}
