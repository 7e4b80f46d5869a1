import { run } from '../../../adapters/exec.js';
import { commandReloader, LocalFileHost } from '../../../adapters/config-applier/index.js';
import type { Settings } from '../../../config/settings.js';
import { readSettingsFile, writeSettingsKey } from '../../../config/settings-file.js';
import { SNAKEOIL } from './common.js';
import { localHostOps } from './host-ops.js';
import type { WiredDaemon, WiringInput } from './types.js';

const UNITS: Record<WiredDaemon, string> = { postfix: 'postfix', dovecot: 'dovecot', rspamd: 'rspamd', nginx: 'nginx', fail2ban: 'fail2ban', postsrsd: 'postsrsd', nftables: 'nftables' };

/**
 * The wiring of this host from mailsvc's settings: Debian's paths (the
 * helper's settings where it has one), root's file operations, and each
 * daemon reloaded with `systemctl reload-or-restart` (which also starts a
 * daemon that is down, such as fail2ban before its sshd jail is fixed).
 */
export function hostWiring(s: Settings, deployDir: string, opts: { dryRun: boolean; noWire: readonly WiredDaemon[] }): WiringInput {
  const file = readSettingsFile(s.configFile);
  return {
    ctx: {
      paths: {
        postfixDir: s.helper.postfixConfigDir,
        postfixSpool: '/var/spool/postfix',
        dovecotConf: s.helper.dovecotConfig ?? '/etc/dovecot/dovecot.conf',
        rspamdLocalDir: s.helper.rspamdLocalDir,
        nginxConf: s.helper.nginxConfig,
        fail2banDir: s.helper.fail2banConfigDir,
        postsrsdDefaults: s.helper.postsrsdDefaults,
        nftablesConf: '/etc/nftables.conf',
        deployDir,
        settingsFile: s.configFile,
        vmailDir: s.backup.mailStorage,
        tlsDir: s.helper.tlsDir,
        snakeoil: SNAKEOIL,
      },
      settings: {
        databaseUrl: s.databaseUrl,
        // The unit's socket (RuntimeDirectory=mailsvc) unless the settings name another.
        authHookSocket: process.env.MAILSVC_MAIL_AUTH_SOCKET ?? file.MAILSVC_MAIL_AUTH_SOCKET ?? '/run/mailsvc/auth-hook.sock',
        authLog: s.authLog,
        enableSrs: s.dns.enableSrs,
        srsDomain: s.dns.srsDomain,
        enableUserPortal: s.enableUserPortal,
        serverName: s.certs.mailHostname,
        acmeWebroot: s.certs.webroot,
        trustedProxies: s.trustedProxies,
        serviceUser: 'mailsvc',
      },
      exec: run,
    },
    dryRun: opts.dryRun,
    noWire: opts.noWire,
    host: localHostOps(run),
    files: new LocalFileHost(),
    // Dovecot is restarted: its new listeners (Postfix's SASL and LMTP sockets) and the auth workers' groups take effect at once.
    reloader: commandReloader(Object.fromEntries(Object.entries(UNITS).map(([d, unit]) => [d, ['systemctl', d === 'dovecot' ? 'restart' : 'reload-or-restart', unit] as const]))),
    writeSetting: (k, v) => writeSettingsKey(s.configFile, k, v),
    readSettings: () => readSettingsFile(s.configFile),
  };
}
