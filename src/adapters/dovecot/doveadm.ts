import type { HelperClient } from '../helper-client.js';

export type KickResult = { kicked: boolean; detail: string; failed?: boolean };
export type MailSessionKicker = { kick(user: string): Promise<KickResult> };

/**
 * `doveadm [-c config] kick -- <user>` ends the user's open IMAP and POP
 * sessions. It needs root (anvil's socket is root's and the sessions run as
 * vmail), so it goes through the privileged helper's `doveadm-kick` action.
 */
export class DoveadmKicker implements MailSessionKicker {
  constructor(private readonly helper: HelperClient) {}

  async kick(user: string): Promise<KickResult> {
    try {
      // doveadm kick exits 0 when it kicked someone and 68 (EX_NOUSER) when nobody was connected.
      const r = await this.helper.run('doveadm-kick', [user]);
      return { kicked: r.code === 0, detail: r.stdout.trim() || r.stderr.trim() };
    } catch (err) {
      return { kicked: false, failed: true, detail: `doveadm kick did not run: ${err instanceof Error ? err.message : String(err)}` };
    }
  }
}
