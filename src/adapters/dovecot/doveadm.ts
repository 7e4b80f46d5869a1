import { run } from '../exec.js';

export type MailSessionKicker = { kick(user: string): Promise<{ kicked: boolean; detail: string }> };

/** `doveadm [-c config] kick <user>`: ends the user's open IMAP and POP sessions. */
export class DoveadmKicker implements MailSessionKicker {
  constructor(private readonly opts: { binary: string; config?: string | undefined }) {}

  async kick(user: string): Promise<{ kicked: boolean; detail: string }> {
    const args = [...(this.opts.config ? ['-c', this.opts.config] : []), 'kick', user];
    try {
      const r = await run(this.opts.binary, args, { timeoutMs: 10_000 });
      // doveadm kick exits 0 when it kicked someone and 68 (EX_NOUSER) when nobody was connected.
      if (r.code === 0 || r.code === 68) return { kicked: r.code === 0, detail: r.stdout.trim() || r.stderr.trim() };
      return { kicked: false, detail: `doveadm kick exited ${r.code}: ${r.stderr.trim().slice(0, 300)}` };
    } catch (err) {
      return { kicked: false, detail: `doveadm could not run: ${err instanceof Error ? err.message : String(err)}` };
    }
  }
}
