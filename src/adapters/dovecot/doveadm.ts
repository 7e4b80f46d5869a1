import { run } from '../exec.js';

export type KickResult = { kicked: boolean; detail: string; failed?: boolean };
export type MailSessionKicker = { kick(user: string): Promise<KickResult> };

/**
 * `doveadm [-c config] kick <user>`: ends the user's open IMAP and POP sessions.
 * `binary` may carry a prefix split on spaces, e.g. `sudo -n /usr/bin/doveadm`
 * (kick needs root; mailsvc does not run as root). No shell is involved.
 */
export class DoveadmKicker implements MailSessionKicker {
  constructor(private readonly opts: { binary: string; config?: string | undefined }) {}

  async kick(user: string): Promise<KickResult> {
    const [file = 'doveadm', ...prefix] = this.opts.binary.trim().split(/\s+/);
    const args = [...prefix, ...(this.opts.config ? ['-c', this.opts.config] : []), 'kick', user];
    try {
      const r = await run(file, args, { timeoutMs: 10_000 });
      // doveadm kick exits 0 when it kicked someone and 68 (EX_NOUSER) when nobody was connected.
      if (r.code === 0 || r.code === 68) return { kicked: r.code === 0, detail: r.stdout.trim() || r.stderr.trim() };
      return { kicked: false, failed: true, detail: `doveadm kick exited ${r.code}: ${r.stderr.trim().slice(0, 300)}` };
    } catch (err) {
      return { kicked: false, failed: true, detail: `doveadm could not run: ${err instanceof Error ? err.message : String(err)}` };
    }
  }
}
