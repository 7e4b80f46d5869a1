import { basename } from 'node:path';

/**
 * One rule for a daemon that is absent or unreachable (not installed, not
 * running, its socket or configuration missing): the `unavailable` error
 * (HTTP 503 with Retry-After, CLI exit 69) with one line saying what to
 * install or start. These sentences are fixed: they name a program, a
 * package, a unit and a path from the helper's or the service's own settings,
 * never anything a caller sent and never a program's output.
 */

type Daemon = { name: string; pkg: string; unit: string };

const POSTFIX: Daemon = { name: 'Postfix', pkg: 'postfix', unit: 'postfix' };
const FAIL2BAN: Daemon = { name: 'fail2ban', pkg: 'fail2ban', unit: 'fail2ban' };

/** The daemon (package and unit) each program mailsvc runs belongs to. */
const PROGRAMS: Record<string, Daemon> = {
  postfix: POSTFIX,
  postsuper: POSTFIX,
  postqueue: POSTFIX,
  postconf: POSTFIX,
  postmap: POSTFIX,
  'fail2ban-client': FAIL2BAN,
  nft: { name: 'nftables', pkg: 'nftables', unit: 'nftables' },
  doveadm: { name: 'Dovecot', pkg: 'dovecot-core', unit: 'dovecot' },
  doveconf: { name: 'Dovecot', pkg: 'dovecot-core', unit: 'dovecot' },
  rspamadm: { name: 'Rspamd', pkg: 'rspamd', unit: 'rspamd' },
  rspamc: { name: 'Rspamd', pkg: 'rspamd', unit: 'rspamd' },
  postsrsd: { name: 'postsrsd', pkg: 'postsrsd', unit: 'postsrsd' },
  systemctl: { name: 'systemd', pkg: 'systemd', unit: 'systemd' },
};

/** Seconds a client is asked to wait before it tries a missing daemon again (someone has to install or start it). */
export const DAEMON_RETRY_AFTER = 30;

/** "Postfix is not installed here (no postsuper on the PATH): apt-get install postfix". */
export function notInstalled(program: string): string {
  const name = basename(program);
  const d = PROGRAMS[name];
  return d ? `${d.name} is not installed here (no ${name} on the PATH): apt-get install ${d.pkg}` : `${name} is not installed here (not on the PATH): install it`;
}

/** "fail2ban is not running (no socket at /run/fail2ban/fail2ban.sock): start it with systemctl start fail2ban". */
export function notRunning(daemon: 'postfix' | 'fail2ban', why: string): string {
  const d = daemon === 'postfix' ? POSTFIX : FAIL2BAN;
  return `${d.name} is not running (${why}): start it with systemctl start ${d.unit}`;
}

/** A Postfix configuration directory without main.cf: the package is missing or was never set up. */
export function postfixNotConfigured(configDir: string): string {
  return `Postfix is not set up here (no main.cf in ${configDir}): apt-get install postfix, or set MAILSVC_POSTFIX_CONFIG_DIR to its configuration directory`;
}
