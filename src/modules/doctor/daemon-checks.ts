import { existsSync } from 'node:fs';
import type { HelperEndpoint } from '../../config/helper-settings.js';
import type { HelperClient } from '../../adapters/helper-client.js';
import { HelperError } from '../../adapters/helper-client.js';
import type { Component } from '../report/index.js';
import { NFTABLES_NOT_NEEDED, NOT_INSTALLED } from '../report/index.js';
import type { DoctorCheck } from './schema.js';
import type { Finding } from './run.js';

/** Each daemon mailsvc manages: its Debian package and systemd unit (the database has neither here). */
export const DAEMONS: ReadonlyArray<{ id: string; name: string; pkg: string | null; unit: string | null }> = [
  { id: 'database', name: 'the database', pkg: null, unit: null },
  { id: 'redis', name: 'Redis', pkg: 'redis-server', unit: 'redis-server' },
  { id: 'postfix', name: 'Postfix', pkg: 'postfix', unit: 'postfix' },
  { id: 'rspamd', name: 'Rspamd', pkg: 'rspamd', unit: 'rspamd' },
  { id: 'dovecot', name: 'Dovecot', pkg: 'dovecot-core', unit: 'dovecot' },
  { id: 'fail2ban', name: 'fail2ban', pkg: 'fail2ban', unit: 'fail2ban' },
  { id: 'nftables', name: 'nftables', pkg: 'nftables', unit: 'nftables' },
  { id: 'postsrsd', name: 'postsrsd', pkg: 'postsrsd', unit: 'postsrsd' },
  { id: 'nginx', name: 'nginx', pkg: 'nginx', unit: 'nginx' },
];

const START: Record<string, string> = {
  database: 'start the database server, or correct MAILSVC_DATABASE_URL',
  redis: 'start Redis (systemctl start redis-server), or correct MAILSVC_REDIS_URL',
  rspamd: 'start Rspamd (systemctl start rspamd), or correct MAILSVC_RSPAMD_CONTROLLER_URL',
  // A oneshot unit that loads the ruleset at boot: started but not enabled, it is gone after the next reboot.
  nftables: 'systemctl enable --now nftables (mailsvc\'s firewall is on: the unit must load at boot); if it fails, read journalctl -u nftables',
};

/**
 * A component as the report's probe found it, as a doctor line. The detail
 * is the probe's own (`topology show` says the same words for the same state).
 */
export function daemonLine(d: (typeof DAEMONS)[number], c: Component | undefined): DoctorCheck {
  const base = { id: `daemon.${d.id}`, name: d.name };
  if (!c) return { ...base, status: 'unknown', detail: 'not probed', fix: null };
  const where = [c.version ? `version ${c.version}` : null, c.address ? `at ${c.address}` : null].filter(Boolean).join(', ');
  if (c.status === 'up') return { ...base, status: 'ok', detail: `running${where ? `, ${where}` : ''}`, fix: null };
  if (c.status === 'down') {
    const start = START[d.id] ?? `start it (systemctl start ${d.unit ?? d.id}); if it stops again, read journalctl -u ${d.unit ?? d.id}`;
    return { ...base, status: 'fail', detail: c.detail ?? 'down', fix: start };
  }
  if (d.id === 'redis' && c.detail?.startsWith('not configured')) return { ...base, status: 'ok', detail: `${c.detail}: one API instance needs none`, fix: null };
  if (d.id === 'nftables' && c.detail === NFTABLES_NOT_NEEDED) return { ...base, status: 'ok', detail: `${c.detail}; before switching it on: systemctl enable --now nftables`, fix: null };
  if (c.detail === NOT_INSTALLED) return { ...base, status: 'unknown', detail: NOT_INSTALLED, fix: `install ${d.pkg ?? d.id} if this host should run it` };
  return { ...base, status: 'unknown', detail: c.detail ?? 'could not tell', fix: d.unit ? `look at it by hand: systemctl status ${d.unit}` : null };
}

const HELPER_FIX = 'start mailsvc-helper.socket (systemctl enable --now mailsvc-helper.socket)';

/** The helper answers on its socket: a harmless action (`postfix-status`) asked; any answer is an answer. */
export async function helperCheck(endpoint: HelperEndpoint, helper: HelperClient): Promise<Finding> {
  if (endpoint.mode === 'direct') {
    return { status: 'warn', detail: 'MAILSVC_HELPER=direct: root work runs in this process (for development and tests only)', fix: 'set MAILSVC_HELPER=unix:/run/mailsvc/helper.sock and enable mailsvc-helper.socket' };
  }
  if (!existsSync(endpoint.path)) return { status: 'fail', detail: `no helper socket at ${endpoint.path}`, fix: HELPER_FIX };
  try {
    await helper.run('postfix-status', []);
  } catch (err) {
    if (err instanceof HelperError && err.kind === 'unreachable') return { status: 'fail', detail: `mailsvc-helper does not answer at ${endpoint.path}`, fix: HELPER_FIX };
    // Refused or failed: the helper answered (Postfix may be absent; the postfix line says so).
  }
  return { status: 'ok', detail: `answers at ${endpoint.path}`, fix: null };
}
