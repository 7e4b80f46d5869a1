import { join } from 'node:path';
import type { RenderedFile } from '../config-applier/index.js';

/** The jails mailsvc configures, by their limit-key names (`nginx` is fail2ban's `nginx-http-auth`). */
export const JAILS = ['sshd', 'dovecot', 'postfix', 'postfix-sasl', 'nginx', 'mailsvc-auth', 'recidive'] as const;
export type JailName = (typeof JAILS)[number];

/** One jail's thresholds: whole seconds for findtime and bantime; `increment` turns on `bantime.increment`. */
export type JailSettings = { maxretry?: number; findtime?: number; bantime?: number; increment?: boolean };
/** The input of renderJails: any subset of the jails; a missing key keeps fail2ban's own value. */
export type JailThresholds = Partial<Record<JailName, JailSettings>>;

export type JailRenderOptions = {
  /** MAILSVC_FAIL2BAN_CONFIG_DIR: the files go to `<dir>/jail.d/mailsvc-<jail>.local`. */
  configDir?: string;
  /**
   * Postfix's `maillog_file` when Postfix writes one (Debian 12 without rsyslog):
   * the postfix, postfix-sasl and dovecot jails read it. Null: they read the
   * systemd journal (`backend = systemd`), as the sshd jail always does.
   */
  mailLog?: string | null;
  /** The auth log mailsvc writes (MAILSVC_AUTH_LOG). */
  authLog?: string;
  /** fail2ban's own log, which recidive reads. */
  fail2banLog?: string;
  /** nginx's error log, which nginx-http-auth reads. */
  nginxErrorLog?: string;
  /** Jails rendered `enabled = false`, each with the reason written above it (not configured, its log missing). */
  disabled?: Partial<Record<JailName, string>>;
};

const SECTION: Record<JailName, string> = {
  sshd: 'sshd',
  dovecot: 'dovecot',
  postfix: 'postfix',
  'postfix-sasl': 'postfix-sasl',
  nginx: 'nginx-http-auth',
  'mailsvc-auth': 'mailsvc-auth',
  recidive: 'recidive',
};

function whole(jail: JailName, key: string, v: number, min: number): string {
  if (!Number.isSafeInteger(v) || v < min) throw new RangeError(`fail2ban-${jail}-${key} must be a whole number >= ${min}`);
  return String(v);
}

/** Where a jail reads its log from. */
function source(jail: JailName, o: Required<JailRenderOptions>): string[] {
  switch (jail) {
    case 'sshd':
      return ['backend = systemd'];
    case 'postfix':
    case 'postfix-sasl':
    case 'dovecot':
      return o.mailLog ? ['backend = auto', `logpath = ${o.mailLog}`] : ['backend = systemd'];
    case 'nginx':
      return ['backend = auto', `logpath = ${o.nginxErrorLog}`];
    case 'mailsvc-auth':
      return ['backend = auto', `logpath = ${o.authLog}`];
    case 'recidive':
      return ['backend = auto', `logpath = ${o.fail2banLog}`];
  }
}

/**
 * The fail2ban jail files mailsvc owns: one `jail.d/mailsvc-<jail>.local` per
 * jail, enabling it, saying where it reads its log and setting the given
 * thresholds. Pure: same input, same files; a value out of range throws a
 * RangeError naming its limit key. Apply the files through the config
 * applier with `fail2ban-client -t` as checker.
 */
export function renderJails(thresholds: JailThresholds, opts: JailRenderOptions = {}): RenderedFile[] {
  const o: Required<JailRenderOptions> = {
    configDir: opts.configDir ?? '/etc/fail2ban',
    mailLog: opts.mailLog ?? null,
    authLog: opts.authLog ?? '/var/lib/mailsvc/auth.log',
    fail2banLog: opts.fail2banLog ?? '/var/log/fail2ban.log',
    nginxErrorLog: opts.nginxErrorLog ?? '/var/log/nginx/error.log',
    disabled: opts.disabled ?? {},
  };
  return JAILS.map((jail) => {
    const t = thresholds[jail] ?? {};
    const off = o.disabled[jail];
    const lines = [
      '# Written by mailsvc (limits apply); changes here are replaced on the next apply.',
      ...(off === undefined ? [] : [`# Disabled: ${off.replace(/\s+/g, ' ')}`]),
      `[${SECTION[jail]}]`,
      `enabled = ${off === undefined ? 'true' : 'false'}`,
      ...source(jail, o),
      ...(jail === 'mailsvc-auth' ? ['filter = mailsvc-auth', 'port = http,https'] : []),
      ...(t.maxretry === undefined ? [] : [`maxretry = ${whole(jail, 'maxretry', t.maxretry, 1)}`]),
      ...(t.findtime === undefined ? [] : [`findtime = ${whole(jail, 'findtime', t.findtime, 1)}`]),
      ...(t.bantime === undefined ? [] : [`bantime = ${whole(jail, 'bantime', t.bantime, 1)}`]),
      ...(t.increment === undefined ? [] : [`bantime.increment = ${t.increment ? 'true' : 'false'}`]),
    ];
    return { path: join(o.configDir, 'jail.d', `mailsvc-${jail}.local`), content: lines.join('\n') + '\n', mode: 0o644 };
  });
}
