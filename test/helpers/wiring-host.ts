import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { LocalFileHost } from '../../src/adapters/config-applier/index.js';
import type { DaemonReloader } from '../../src/adapters/config-applier/index.js';
import { run } from '../../src/adapters/exec.js';
import { readSettingsFile, writeSettingsKey } from '../../src/config/settings-file.js';
import type { HostOps, WiredDaemon, WiringInput, WiringSettings } from '../../src/modules/install/wiring/index.js';
import { copyDebianDovecotConfig, debianDovecotConfigUnavailable } from './package-config.js';
import { REPO_ROOT } from './cli.js';

/**
 * A machine's mail daemons as their Debian packages configure them, copied
 * under `root` so that `mailsvc install`'s wiring can be run on them with the
 * real checkers (postfix check, doveconf -n, nginx -t, fail2ban-client -t,
 * rspamadm configtest, nft -c). Only the host steps (users, groups,
 * directories, units) and the reloads are doubles: they are recorded.
 */
export const WIRING_SOURCES: Record<WiredDaemon, { program: string; needs: string[] }> = {
  postfix: { program: 'postconf', needs: ['/usr/share/postfix/main.cf.debian', '/usr/share/postfix/master.cf.dist'] },
  dovecot: { program: 'doveconf', needs: [] },
  rspamd: { program: 'rspamadm', needs: ['/etc/rspamd/rspamd.conf'] },
  nginx: { program: 'nginx', needs: ['/etc/nginx/nginx.conf'] },
  fail2ban: { program: 'fail2ban-client', needs: ['/etc/fail2ban/jail.conf'] },
  postsrsd: { program: 'sh', needs: ['/etc/default/postsrsd'] },
  nftables: { program: 'nft', needs: [] },
};

const has = (program: string): boolean => {
  try {
    execFileSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore', env: { PATH: `${process.env.PATH ?? ''}:/usr/sbin:/sbin` } });
    return true;
  } catch {
    return false;
  }
};

/** Why a daemon's wiring cannot be tested here (its package or its pristine configuration missing), or null. */
export function wiringUnavailable(d: WiredDaemon): string | null {
  const src = WIRING_SOURCES[d];
  if (!has(src.program)) return `${src.program} not installed`;
  if (d === 'dovecot') return debianDovecotConfigUnavailable();
  const missing = src.needs.find((f) => !existsSync(f));
  return missing ? `no ${missing}` : null;
}

/** Debian 12's /etc/nftables.conf as the nftables package ships it. */
export const DEBIAN_NFTABLES_CONF = '#!/usr/sbin/nft -f\n\nflush ruleset\n\ntable inet filter {\n\tchain input {\n\t\ttype filter hook input priority filter;\n\t}\n\tchain forward {\n\t\ttype filter hook forward priority filter;\n\t}\n\tchain output {\n\t\ttype filter hook output priority filter;\n\t}\n}\n';

/** Copies each daemon's package configuration under root; returns the paths the wiring takes. */
export function wiringRoot(root: string): WiringInput['ctx']['paths'] {
  const p = (...parts: string[]): string => join(root, ...parts);
  if (has('postconf')) {
    mkdirSync(p('postfix'), { recursive: true });
    cpSync('/usr/share/postfix/main.cf.debian', p('postfix', 'main.cf'));
    writeFileSync(p('postfix', 'main.cf'), 'myhostname = mail.example.test\ninet_interfaces = loopback-only\nmydestination = localhost\n', { flag: 'a' });
    cpSync('/usr/share/postfix/master.cf.dist', p('postfix', 'master.cf'));
  }
  if (!debianDovecotConfigUnavailable()) copyDebianDovecotConfig(p('dovecot'));
  mkdirSync(p('rspamd', 'local.d'), { recursive: true });
  mkdirSync(p('rspamd', 'override.d'), { recursive: true });
  if (existsSync('/etc/nginx/nginx.conf')) {
    cpSync('/etc/nginx', p('nginx'), { recursive: true });
    // The copy includes its own sites-enabled/ and conf.d/ (Debian's nginx.conf names them by absolute path).
    writeFileSync(p('nginx', 'nginx.conf'), readFileSync(p('nginx', 'nginx.conf'), 'utf8').replaceAll('include /etc/nginx/', `include ${p('nginx')}/`));
  }
  if (existsSync('/etc/fail2ban')) cpSync('/etc/fail2ban', p('fail2ban'), { recursive: true });
  mkdirSync(p('default'), { recursive: true });
  if (existsSync('/etc/default/postsrsd')) cpSync('/etc/default/postsrsd', p('default', 'postsrsd'));
  writeFileSync(p('nftables.conf'), DEBIAN_NFTABLES_CONF, { mode: 0o755 });
  mkdirSync(p('ssl'), { recursive: true });
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=mail.example.test', '-keyout', p('ssl', 'snakeoil.key'), '-out', p('ssl', 'snakeoil.pem')], { stdio: 'ignore' });
  writeFileSync(p('mailsvc.conf'), 'MAILSVC_DATA_DIR=/var/lib/mailsvc\n', { mode: 0o640 });
  return {
    postfixDir: p('postfix'),
    postfixSpool: p('spool'),
    dovecotConf: p('dovecot', 'dovecot.conf'),
    rspamdLocalDir: p('rspamd', 'local.d'),
    nginxConf: p('nginx', 'nginx.conf'),
    fail2banDir: p('fail2ban'),
    postsrsdDefaults: p('default', 'postsrsd'),
    nftablesConf: p('nftables.conf'),
    deployDir: join(REPO_ROOT, 'deploy'),
    settingsFile: p('mailsvc.conf'),
    vmailDir: p('vmail'),
    tlsDir: p('tls'),
    snakeoil: { cert: p('ssl', 'snakeoil.pem'), key: p('ssl', 'snakeoil.key') },
  };
}

/**
 * Host steps recorded, each "changing" the first time only (as the real ones
 * do on a second run). Directories and files under `root` are really made
 * (without owners), so that the files the wiring puts in them can be written.
 */
export function recordingHost(root: string): HostOps & { log: string[] } {
  const log: string[] = [];
  const seen = new Set<string>();
  const once = (what: string): Promise<boolean> => {
    log.push(what);
    if (seen.has(what)) return Promise.resolve(false);
    seen.add(what);
    return Promise.resolve(true);
  };
  return {
    log,
    addToGroups: async (user, groups) => ((await once(`groups ${user} ${groups.join(',')}`)) ? [...groups] : []),
    ensureSystemUser: (name) => once(`user ${name}`),
    ensureDir: (path, o, g, mode) => {
      if (path.startsWith(`${root}/`)) mkdirSync(path, { recursive: true, mode });
      return once(`dir ${path} ${o}:${g} ${mode.toString(8)}`);
    },
    ensureFile: (path, _o, _g, mode) => {
      if (path.startsWith(`${root}/`) && !existsSync(path)) writeFileSync(path, '', { mode });
      return once(`file ${path}`);
    },
    ensureMode: (path, mode) => once(`mode ${path} ${mode.toString(8)}`),
    enableUnit: (unit) => once(`enable ${unit}`),
    ensureCertificate: (cert) => once(`certificate ${cert}`),
    groupExists: () => Promise.resolve(true),
  };
}

/** Reloads recorded; `failing` names daemons whose first reload fails (the one after the restore works). */
export function recordingReloader(failing: readonly string[] = []): DaemonReloader & { reloads: string[] } {
  const reloads: string[] = [];
  return {
    reloads,
    reload(d) {
      reloads.push(d);
      const first = reloads.filter((x) => x === d).length === 1;
      return failing.includes(d) && first ? Promise.reject(new Error(`${d} refused to reload`)) : Promise.resolve();
    },
  };
}

export const WIRING_SETTINGS: WiringSettings = {
  databaseUrl: 'sqlite:///var/lib/mailsvc/mailsvc.db',
  authHookSocket: '/run/mailsvc/auth-hook.sock',
  authLog: '/var/lib/mailsvc/auth.log',
  enableSrs: true,
  srsDomain: 'srs.example.net',
  enableUserPortal: false,
  serverName: 'mail.example.test',
  acmeWebroot: undefined,
  trustedProxies: [],
  serviceUser: 'mailsvc',
};

/** The wiring input for a copy made by wiringRoot: real checkers, files and postconf; recorded host steps and reloads. */
export function wiringInput(paths: WiringInput['ctx']['paths'], opts: { only: readonly WiredDaemon[]; dryRun?: boolean; noWire?: WiredDaemon[]; failing?: string[]; settings?: Partial<WiringSettings> }) {
  const host = recordingHost(dirname(paths.settingsFile));
  const reloader = recordingReloader(opts.failing);
  const input: WiringInput = {
    ctx: { paths, settings: { ...WIRING_SETTINGS, authLog: join(dirname(paths.settingsFile), 'auth.log'), ...opts.settings }, exec: run },
    dryRun: opts.dryRun ?? false,
    noWire: opts.noWire ?? [],
    installed: (d) => Promise.resolve(opts.only.includes(d)),
    host,
    files: new LocalFileHost(),
    reloader,
    writeSetting: (k, v) => writeSettingsKey(paths.settingsFile, k, v),
    readSettings: () => readSettingsFile(paths.settingsFile),
  };
  return { input, host, reloader };
}
