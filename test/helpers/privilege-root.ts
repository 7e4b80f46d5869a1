import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The unprivileged caller of the privilege-boundary suite: nobody:nogroup. */
export const NOBODY = 65534;

/**
 * A temp root standing for `/` of a mail host, for the helper under attack:
 * T/etc/{postfix,fail2ban,rspamd,dovecot,default/postsrsd} (copies of the
 * machine's when it has them, else minimal ones), T/var/{spool,lib,log}, a
 * root-only secret and the hostile files a caller may name.
 */
export type PrivilegeRoot = {
  root: string;
  /** The helper's environment: every path setting points into the root. */
  env: Record<string, string>;
  /** 32 hex digits, written on several lines of `secretFile` (0600 root, in a 0700 directory). */
  marker: string;
  secretFile: string;
  /** Paths a caller may name in an argument: the secret, a FIFO, symlinks to the secret, /dev/zero and /etc/shadow, a device node, files "the caller wrote". */
  hostilePaths: string[];
  /** The lines the service manager and systemctl stand-ins were run with. */
  managerLog: string;
};

const ETC = (root: string, ...p: string[]): string => join(root, 'etc', ...p);

function copyOrMake(from: string, to: string, filter?: (src: string) => boolean): void {
  if (existsSync(from)) cpSync(from, to, { recursive: true, dereference: false, ...(filter ? { filter } : {}) });
  else mkdirSync(to, { recursive: true });
}

export function makePrivilegeRoot(): PrivilegeRoot {
  const root = mkdtempSync(join(tmpdir(), 'mailsvc-privbound-'));
  chmodSync(root, 0o755);
  for (const d of ['var/spool/postfix', 'var/lib/postfix', 'var/lib/dovecot', 'var/log', 'run/dovecot', 'tmp', 'bin']) mkdirSync(join(root, d), { recursive: true });
  chmodSync(join(root, 'tmp'), 0o700);

  // Postfix: the machine's files (master.cf, maps) with a minimal main.cf whose queue and data directories lie in the root.
  copyOrMake('/etc/postfix', ETC(root, 'postfix'), (s) => !s.endsWith('/sasl'));
  writeFileSync(ETC(root, 'postfix/main.cf'), [
    'compatibility_level = 3.6', 'myhostname = mail.example.org',
    `queue_directory = ${join(root, 'var/spool/postfix')}`, `data_directory = ${join(root, 'var/lib/postfix')}`,
    'inet_interfaces = loopback-only', 'inet_protocols = ipv4', '',
  ].join('\n'));
  // fail2ban: the machine's filters and actions, no jails of its own.
  copyOrMake('/etc/fail2ban', ETC(root, 'fail2ban'));
  mkdirSync(ETC(root, 'fail2ban/jail.d'), { recursive: true });
  for (const n of readdirSync(ETC(root, 'fail2ban/jail.d'))) rmSync(ETC(root, 'fail2ban/jail.d', n), { recursive: true });
  // Rspamd: a copy of the machine's configuration (its dkim/ keys left out), or empty directories.
  copyOrMake('/etc/rspamd', ETC(root, 'rspamd'), (s) => !s.startsWith('/etc/rspamd/dkim'));
  mkdirSync(ETC(root, 'rspamd/local.d'), { recursive: true });
  // Dovecot: doveadm talks to the master and anvil in base_dir, which lies in the root: never the machine's Dovecot.
  mkdirSync(ETC(root, 'dovecot/conf.d'), { recursive: true });
  writeFileSync(ETC(root, 'dovecot/dovecot.conf'), `base_dir = ${join(root, 'run/dovecot')}\nstate_dir = ${join(root, 'var/lib/dovecot')}\n!include_try conf.d/*.conf\n`);
  // nginx: a main file and the snippet directory the certificate actions write (mailsvc's own tls directory is made by the helper).
  mkdirSync(ETC(root, 'nginx/snippets'), { recursive: true });
  mkdirSync(ETC(root, 'mailsvc'), { recursive: true });
  writeFileSync(ETC(root, 'nginx/nginx.conf'), `pid ${join(root, 'run/nginx.pid')};\nerror_log ${join(root, 'var/log/nginx-error.log')};\nevents {}\n`);
  mkdirSync(ETC(root, 'default'), { recursive: true });
  writeFileSync(ETC(root, 'default/postsrsd'), 'SRS_DOMAIN=example.org\nSRS_EXCLUDE_DOMAINS=\n');
  for (const log of ['auth.log', 'mail.log', 'nginx-error.log']) writeFileSync(join(root, 'var/log', log), '');

  // Stand-ins for systemctl and MAILSVC_SERVICE_MANAGER: they record their argv and succeed; nothing real restarts.
  const managerLog = join(root, 'run/manager.log');
  const recorder = (name: string): string => `#!/bin/sh\necho "${name} $*" >> '${managerLog}'\nexit 0\n`;
  writeFileSync(join(root, 'bin/systemctl'), recorder('systemctl'), { mode: 0o755 });
  writeFileSync(join(root, 'run/service-manager'), recorder('manager'), { mode: 0o755 });

  // The secret: only root reads it.
  const marker = randomBytes(16).toString('hex');
  mkdirSync(join(root, 'secret'), { mode: 0o700 });
  const secretFile = join(root, 'secret/marker');
  writeFileSync(secretFile, `secret ${marker}\n${marker}\n# ${marker} }\ntable inet mailsvc { # ${marker}\n`, { mode: 0o600 });

  // Special files a caller may name (root's, in a directory anyone may list).
  const pub = join(root, 'pub');
  mkdirSync(pub, { mode: 0o755 });
  chmodSync(pub, 0o755);
  const fifo = join(pub, 'fifo.nft');
  spawnSync('mkfifo', ['-m', '0644', fifo]);
  symlinkSync(secretFile, join(pub, 'link.nft'));
  symlinkSync('/dev/zero', join(pub, 'zero.nft'));
  symlinkSync('/etc/shadow', join(pub, 'shadow.nft'));
  spawnSync('mknod', ['-m', '0666', join(pub, 'null.nft'), 'c', '1', '3']);

  // Files the caller wrote itself (owned by nobody): nftables text that names only mailsvc's table at the top level and
  // pulls in the secret or /etc/shadow, or hides a flush of the whole ruleset behind quoted "#" and "}".
  const drop = join(root, 'drop');
  mkdirSync(drop, { mode: 0o755 });
  const written: [string, string][] = [
    ['include-secret.nft', `table inet mailsvc {\n  include "${secretFile}"\n}\n`],
    ['include-shadow.nft', 'table inet mailsvc {\n  include "/etc/shadow"\n}\n'],
    ['flush.nft', 'table inet mailsvc {\n  chain c { comment "{"; }\n}\nflush ruleset\ntable ip filter {\n  chain input { type filter hook input priority 0; policy accept; }\n}\ntable inet mailsvc {\n  chain d { comment "}"; }\n}\n'],
  ];
  for (const [name, text] of written) {
    writeFileSync(join(drop, name), text, { mode: 0o644 });
    chownSync(join(drop, name), NOBODY, NOBODY);
  }
  chownSync(drop, NOBODY, NOBODY);

  const env: Record<string, string> = {
    PATH: `${join(root, 'bin')}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`,
    TMPDIR: join(root, 'tmp'),
    MAILSVC_POSTFIX_CONFIG_DIR: ETC(root, 'postfix'),
    MAILSVC_FAIL2BAN_CONFIG_DIR: ETC(root, 'fail2ban'),
    MAILSVC_FAIL2BAN_SOCKET: join(root, 'run/f2b.sock'),
    MAILSVC_RSPAMD_LOCAL_DIR: ETC(root, 'rspamd/local.d'),
    MAILSVC_DOVECOT_CONFIG: ETC(root, 'dovecot/dovecot.conf'),
    MAILSVC_POSTSRSD_DEFAULTS: ETC(root, 'default/postsrsd'),
    MAILSVC_AUTH_LOG: join(root, 'var/log/auth.log'),
    MAILSVC_MAIL_LOG: join(root, 'var/log/mail.log'),
    MAILSVC_NGINX_ERROR_LOG: join(root, 'var/log/nginx-error.log'),
    MAILSVC_FAIL2BAN_JAILS: 'mailsvc-auth',
    MAILSVC_NFT_TABLE: 'inet mailsvc',
    MAILSVC_SERVICE_MANAGER: join(root, 'run/service-manager'),
    MAILSVC_TLS_DIR: ETC(root, 'mailsvc/tls'),
    MAILSVC_TLS_GROUP: '0',
    MAILSVC_NGINX_CONFIG: ETC(root, 'nginx/nginx.conf'),
    MAILSVC_HELPER_SOCKET_GROUP: String(NOBODY),
  };
  const hostilePaths = [
    secretFile, '/etc/shadow', '/dev/zero', fifo, join(pub, 'link.nft'), join(pub, 'zero.nft'), join(pub, 'shadow.nft'), join(pub, 'null.nft'),
    ...written.map(([name]) => join(drop, name)),
    `${pub}/../secret/marker`, `${drop}/../pub/fifo.nft`,
  ];
  return { root, env, marker, secretFile, hostilePaths, managerLog };
}
