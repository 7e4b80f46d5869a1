import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The auth log the `mailsvc-auth` fail2ban jail reads (docs/contract.md, Lockout).
 * The user name is what the client sent, so it is cut down to characters that
 * cannot forge a second " from <ip>" or a new line.
 */
export class AuthLog {
  /** `onFailure`: told of each failure written (the metrics count them). */
  constructor(private readonly path: string, private readonly onFailure: () => void = () => undefined) {
    mkdirSync(dirname(path), { recursive: true });
  }

  static sanitizeUser(user: string): string {
    const clean = user.replace(/[^A-Za-z0-9._@+-]/g, '_').slice(0, 64);
    return clean === '' ? '-' : clean;
  }

  /** `tag`: mailsvc-auth (the admin API and panel) or mailsvc-portal (the user portal): each has its own fail2ban filter. */
  failure(user: string, ip: string, tag: 'mailsvc-auth' | 'mailsvc-portal' = 'mailsvc-auth'): void {
    const line = `${new Date().toISOString()} ${tag}: authentication failure for ${AuthLog.sanitizeUser(user)} from ${ip}\n`;
    // One append per line: O_APPEND keeps lines whole when instances share the file.
    appendFileSync(this.path, line, { mode: 0o640 });
    this.onFailure();
  }
}
