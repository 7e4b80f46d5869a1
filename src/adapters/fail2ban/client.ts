import { HelperError } from '../helper-client.js';
import type { HelperClient } from '../helper-client.js';
import { AppError } from '../../shared/errors.js';
import { DAEMON_RETRY_AFTER, notRunning } from '../../shared/daemon-hints.js';

/** One address or network a jail bans; times are null when fail2ban did not print them. */
export type JailBan = { ip: string; bannedAt: Date | null; expiresAt: Date | null };

/** `YYYY-MM-DD HH:MM:SS` as fail2ban prints it: the local time of the host (fail2ban runs on this host). */
function localTime(text: string): Date | null {
  const m = /^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)$/.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s] = m.map(Number) as number[];
  const at = new Date(y ?? 0, (mo ?? 1) - 1, d, h, mi, s);
  return Number.isNaN(at.getTime()) ? null : at;
}

/** `fail2ban-client status`: the `Jail list:` line, comma separated (empty when no jail runs). */
export function parseStatus(out: string): string[] {
  const line = out.split('\n').find((l) => /Jail list:/.test(l));
  if (line === undefined) throw new Error(`unexpected fail2ban-client status output: ${out.slice(0, 200)}`);
  return (line.split('Jail list:')[1] ?? '')
    .split(',')
    .map((j) => j.trim())
    .filter((j) => j !== '');
}

/**
 * `get <jail> banip --with-time`: one ban a line,
 * `203.0.113.5 \t2026-11-23 14:04:06 + 600 = 2026-11-23 14:14:06`; a ban without
 * end prints a negative duration. A line holding only an address (older
 * versions, or no time known) gives null times; anything else is skipped.
 */
export function parseBanList(out: string): JailBan[] {
  const bans: JailBan[] = [];
  for (const raw of out.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const m = /^(\S+)\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*\+\s*(-?\d+)\s*=\s*(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$/.exec(line);
    if (m) {
      const permanent = Number(m[3]) < 0;
      bans.push({ ip: m[1] ?? '', bannedAt: localTime(m[2] ?? ''), expiresAt: permanent ? null : localTime(m[4] ?? '') });
    } else if (/^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(line)) {
      bans.push({ ip: line, bannedAt: null, expiresAt: null });
    } else if (/^[0-9a-fA-F:./ ]+$/.test(line)) {
      // Without --with-time support every address is on one line, space separated.
      for (const ip of line.split(/\s+/)) bans.push({ ip, bannedAt: null, expiresAt: null });
    }
  }
  return bans;
}

/** `get <jail> ignoreip`: `|- 127.0.0.0/8` … `` `- ::1 `` lines; none when nothing is ignored. */
export function parseIgnoreIp(out: string): string[] {
  return out
    .split('\n')
    .map((l) => /^\s*[|`]-\s*(\S+)\s*$/.exec(l)?.[1])
    .filter((x): x is string => x !== undefined);
}

/** `banned <ip>`: a Python list of lists, `[['sshd', 'dovecot']]`; the jail names inside quotes. */
export function parseBannedJails(out: string): string[] {
  return [...out.matchAll(/'([^']*)'|"([^"]*)"/g)].map((m) => m[1] ?? m[2] ?? '').filter((j) => j !== '');
}

/**
 * fail2ban through the privileged helper (`fail2ban-client -c <config dir> -s
 * <socket>` runs as root there). A fail2ban that is not installed, has no
 * socket (the helper says so) or does not answer on it is `unavailable`
 * (HTTP 503 with Retry-After, CLI exit 69).
 */
export class Fail2banClient {
  constructor(private readonly helper: HelperClient, private readonly socket: string) {}

  private async call(action: string, args: string[]): Promise<string> {
    try {
      return (await this.helper.run(action, args)).stdout;
    } catch (err) {
      if (err instanceof HelperError && err.kind === 'failed' && err.exec?.kind === 'exit' && err.exec.code === 255) {
        throw new AppError('unavailable', `${notRunning('fail2ban', `it does not answer on ${this.socket}`)}, or set MAILSVC_FAIL2BAN_SOCKET`, { retryAfter: DAEMON_RETRY_AFTER });
      }
      throw err;
    }
  }

  async jails(): Promise<string[]> {
    return parseStatus(await this.call('f2b-status', []));
  }

  async bans(jail: string): Promise<JailBan[]> {
    return parseBanList(await this.call('f2b-jail-bans', [jail]));
  }

  async ignoreIp(jail: string): Promise<string[]> {
    return parseIgnoreIp(await this.call('f2b-ignoreip', [jail]));
  }

  /** The jails that hold this exact address (fail2ban-client banned <ip>). */
  async bannedIn(ip: string): Promise<string[]> {
    return parseBannedJails(await this.call('f2b-banned', [ip]));
  }

  async ban(jail: string, ip: string): Promise<void> {
    await this.call('f2b-ban', [jail, ip]);
  }

  /** True when the jail held it (fail2ban prints how many it removed). */
  async unban(jail: string, ip: string): Promise<boolean> {
    return Number((await this.call('f2b-unban', [jail, ip])).trim()) > 0;
  }
}
