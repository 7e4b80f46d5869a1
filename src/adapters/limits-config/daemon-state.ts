import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../exec.js';
import type { RunFn } from '../config-applier/index.js';
import { FAIL2BAN_JAILS, FAIL2BAN_SECTION, limitSpec, parseLimitValue } from '../../shared/limit-keys.js';
import { readUclKey } from './render.js';
import type { PostfixMailboxLimits } from './render.js';

/** Where the daemons keep the files the limits render to (the helper's settings: root's settings file or the environment). */
export type LimitsPaths = { postfixDir: string; rspamdLocalDir: string; dovecotConfig: string; fail2banDir: string; fail2banSocket: string };

/** The paths from the helper's settings (the service and the helper read the same environment-only settings). */
export function limitsPaths(h: { postfixConfigDir: string; rspamdLocalDir: string; dovecotConfig: string | undefined; fail2banConfigDir: string; fail2banSocket: string }): LimitsPaths {
  return {
    postfixDir: h.postfixConfigDir,
    rspamdLocalDir: h.rspamdLocalDir,
    dovecotConfig: h.dovecotConfig ?? '/etc/dovecot/dovecot.conf',
    fail2banDir: h.fail2banConfigDir,
    fail2banSocket: h.fail2banSocket,
  };
}

const POSTFIX_PARAMS = ['message_size_limit', 'smtpd_recipient_limit', 'smtpd_client_connection_rate_limit', 'mailbox_size_limit', 'virtual_mailbox_limit'] as const;
export type PostfixInForce = Record<(typeof POSTFIX_PARAMS)[number], number>;

const isSocket = (path: string): boolean => {
  try {
    return statSync(path).isSocket();
  } catch {
    return false;
  }
};
const readText = (path: string): string => (existsSync(path) ? readFileSync(path, 'utf8') : '');
const num = (text: string | null | undefined): number | null => {
  if (text === null || text === undefined) return null;
  const m = /^(-?\d+(?:\.\d+)?)s?$/.exec(text.trim());
  return m ? Number(m[1]) : null;
};

/** Reads what the daemons really run with: postconf, fail2ban-client get, the Rspamd local.d files. */
export class DaemonState {
  constructor(readonly paths: LimitsPaths, private readonly exec: RunFn = run) {}

  /** `postconf -c DIR -h …`: null when Postfix has no main.cf there or postconf fails. */
  async postfix(): Promise<PostfixInForce | null> {
    if (!existsSync(join(this.paths.postfixDir, 'main.cf'))) return null;
    const r = await this.exec('postconf', ['-c', this.paths.postfixDir, '-h', ...POSTFIX_PARAMS], { timeoutMs: 10_000 }).catch(() => null);
    if (!r || r.code !== 0) return null;
    const lines = r.stdout.trim().split('\n');
    const out: Partial<PostfixInForce> = {};
    for (const [i, name] of POSTFIX_PARAMS.entries()) {
      const n = num(lines[i]);
      if (n === null) return null;
      out[name] = n;
    }
    return out as PostfixInForce;
  }

  async postfixMailboxLimits(): Promise<PostfixMailboxLimits> {
    const pf = await this.postfix();
    return { mailbox_size_limit: pf?.mailbox_size_limit ?? 0, virtual_mailbox_limit: pf?.virtual_mailbox_limit ?? 0 };
  }

  /** The values in Rspamd's local.d files (what the next start or reload reads). */
  rspamd(): Record<string, number | null> | null {
    const dir = this.paths.rspamdLocalDir;
    if (!existsSync(dir)) return null;
    const options = readText(join(dir, 'options.inc'));
    const actions = readText(join(dir, 'actions.conf'));
    const greylist = readText(join(dir, 'greylist.conf'));
    return {
      max_message: num(readUclKey(options, 'max_message')),
      reject: num(readUclKey(actions, 'reject')),
      add_header: num(readUclKey(actions, 'add_header')),
      greylist: num(readUclKey(actions, 'greylist')),
      timeout: num(readUclKey(greylist, 'timeout')),
      expire: num(readUclKey(greylist, 'expire')),
    };
  }

  /** Dovecot's `quota_max_mail_size` (`doveconf -h`); null without a configuration or the setting. */
  async dovecot(): Promise<number | null> {
    if (!existsSync(this.paths.dovecotConfig)) return null;
    const r = await this.exec('doveconf', ['-c', this.paths.dovecotConfig, '-h', 'plugin/quota_max_mail_size'], { timeoutMs: 10_000 }).catch(() => null);
    const text = r && r.code === 0 ? r.stdout.trim() : '';
    const spec = limitSpec('message-size-limit');
    if (text === '' || !spec) return null;
    try {
      return parseLimitValue({ ...spec, min: 0, max: Number.MAX_SAFE_INTEGER }, text);
    } catch {
      return null;
    }
  }

  /** `fail2ban-client get <jail> maxretry|findtime|bantime` of the running server; null when it is not running. */
  async fail2ban(): Promise<Record<string, number | null> | null> {
    if (!isSocket(this.paths.fail2banSocket)) return null;
    const out: Record<string, number | null> = {};
    const ask = async (jail: (typeof FAIL2BAN_JAILS)[number], what: string): Promise<void> => {
      const r = await this.exec('fail2ban-client', ['-s', this.paths.fail2banSocket, 'get', FAIL2BAN_SECTION[jail], what], { timeoutMs: 10_000 }).catch(() => null);
      // A jail that is not running answers an error: nothing in force to compare.
      out[`fail2ban-${jail}-${what}`] = r && r.code === 0 ? num(r.stdout.trim().split('\n').at(-1)) : null;
    };
    const jobs = FAIL2BAN_JAILS.flatMap((jail) => ['maxretry', 'findtime', 'bantime'].map((what) => () => ask(jail, what)));
    // A few at a time: each is a Python start.
    for (let i = 0; i < jobs.length; i += 4) await Promise.all(jobs.slice(i, i + 4).map((j) => j()));
    return out;
  }

  /** Which daemons run now (only those are reloaded after an apply). */
  async running(daemon: 'postfix' | 'rspamd' | 'dovecot' | 'fail2ban'): Promise<boolean> {
    if (daemon === 'fail2ban') return isSocket(this.paths.fail2banSocket);
    if (daemon === 'dovecot') return this.dovecotRunning();
    const [file, args] = daemon === 'postfix' ? ['postfix', ['-c', this.paths.postfixDir, 'status']] as const : ['systemctl', ['is-active', '--quiet', 'rspamd.service']] as const;
    const r = await this.exec(file, args, { timeoutMs: 10_000 }).catch(() => null);
    return r?.code === 0;
  }

  /** The master process named in `<base_dir>/master.pid` is alive. */
  private async dovecotRunning(): Promise<boolean> {
    const r = await this.exec('doveconf', ['-c', this.paths.dovecotConfig, '-h', 'base_dir'], { timeoutMs: 10_000 }).catch(() => null);
    if (!r || r.code !== 0) return false;
    const pid = Number(readText(join(r.stdout.trim(), 'master.pid')).trim());
    if (!Number.isInteger(pid) || pid <= 0) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}
