import { join } from 'node:path';
import { fail2banChecker } from '../../../adapters/config-applier/index.js';
import type { RenderedFile } from '../../../adapters/config-applier/index.js';
import { template } from './common.js';
import type { DaemonPlan, WiringContext } from './types.js';

/** Bans through nftables (Debian 12 has no iptables), and Debian's sshd jail reading the journal (there is no /var/log/auth.log). */
export function debianDefaults(nftables: boolean): string {
  return [
    '# mailsvc (written by mailsvc install).',
    ...(nftables ? ['[DEFAULT]', 'banaction = nftables-multiport', 'banaction_allports = nftables-allports', ''] : []),
    '# Debian 12 logs to the journal only: without this the sshd jail finds no log and fail2ban does not start.',
    '[sshd]',
    'backend = systemd',
    '',
  ].join('\n');
}

/** fail2ban: mailsvc's filters and jails (the portal's with the portal), bans through nftables, the sshd jail fixed. */
export function planFail2ban(ctx: WiringContext, nftables: boolean): DaemonPlan {
  const dir = ctx.paths.fail2banDir;
  const { authLog, serviceUser, enableUserPortal } = ctx.settings;
  const files: RenderedFile[] = [{ path: join(dir, 'jail.d', '00-mailsvc-defaults.local'), content: debianDefaults(nftables), mode: 0o644 }];
  for (const jail of enableUserPortal ? ['mailsvc-auth', 'mailsvc-portal'] : ['mailsvc-auth']) {
    files.push({ path: join(dir, 'filter.d', `${jail}.conf`), content: template(ctx, `fail2ban/filter.d/${jail}.conf`), mode: 0o644 });
    files.push({ path: join(dir, 'jail.d', `${jail}.conf`), content: template(ctx, `fail2ban/jail.d/${jail}.conf`).replace(/^logpath\s*=.*$/m, `logpath  = ${authLog}`), mode: 0o644 });
  }
  return {
    daemon: 'fail2ban',
    // fail2ban refuses a jail whose log does not exist yet; the service appends to it.
    before: [{ what: `${authLog} (${serviceUser}:${serviceUser} 0640), the log the jail reads`, run: (h) => h.ensureFile(authLog, serviceUser, serviceUser, 0o640) }],
    files,
    checker: fail2banChecker(dir, ctx.exec),
    after: [],
    settings: {},
    notes: ['the jails\' thresholds come from the limits: mailsvc limits apply (docs/limits.md)'],
  };
}
