import { readFileSync, statSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { parseIpNet } from '../shared/ip-net.js';
import { normalizeAddress } from '../shared/mail-names.js';
import { QUEUE_ID_BATCH, parseQueueIdList } from '../shared/queue-id.js';
import type { HelperSettings } from '../config/helper-settings.js';

/** The helper's own settings that actions read (paths and config dirs; never from a caller). */
export type HelperConfig = Pick<HelperSettings, 'doveadm' | 'dovecotConfig' | 'postfixConfigDir' | 'fail2banSocket' | 'fail2banConfigDir'>;

/** One argument: a name for messages, and a validator that returns the canonical value or throws. */
export type Param = { name: string; validate(raw: string): string; secret?: boolean };

/** The program to run: argv only, no shell. */
export type Command = { file: string; args: string[]; okCodes?: number[]; timeoutMs?: number };

export type ActionSpec = {
  summary: string;
  params: readonly Param[];
  /** Receives only values that passed `params`' validators, in order. */
  command(args: readonly string[], cfg: HelperConfig): Command;
};

/** A mail user as the API accepts it (normalizeAddress): never an option, a path or a shell word. */
const mailUser: Param = { name: 'user', validate: (raw) => normalizeAddress(raw).address };

function oneOf<T extends string>(name: string, values: readonly T[]): Param {
  return {
    name,
    validate(raw) {
      if (!(values as readonly string[]).includes(raw)) throw new Error(`${name} must be one of ${values.join(', ')}`);
      return raw;
    },
  };
}

/** A fail2ban jail name: letters, digits, `.`, `_`, `-`; never an option. */
const jail: Param = {
  name: 'jail',
  validate(raw) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(raw)) throw new Error('jail must be a fail2ban jail name (letters, digits, ".", "_", "-")');
    return raw;
  },
};

/** An IPv4/IPv6 address or CIDR network, in canonical form. */
const ipNet: Param = {
  name: 'ip',
  validate(raw) {
    const net = parseIpNet(raw);
    if (!net) throw new Error('ip must be an IPv4 or IPv6 address or a CIDR network');
    return net.text;
  },
};

/**
 * The tables an nftables file names at its top level (`table`, `destroy table`,
 * `delete table`, `add table`), or null when it holds any other top-level
 * statement (`flush ruleset`, `include`, `define` …).
 */
export function nftTopTables(text: string): string[] | null {
  const tables = new Set<string>();
  let depth = 0;
  for (const line of text.split('\n')) {
    const t = line.replace(/#.*$/, '').trim();
    if (depth === 0 && t !== '') {
      const m = /^(?:(?:add|destroy|delete)\s+)?table\s+(ip|ip6|inet|arp|bridge|netdev)\s+([A-Za-z][A-Za-z0-9_]{0,63})\s*(\{\s*)?(\}\s*)?$/.exec(t);
      if (!m) return null;
      tables.add(`${m[1]} ${m[2]}`);
    }
    depth += (t.match(/\{/g) ?? []).length - (t.match(/\}/g) ?? []).length;
    if (depth < 0) return null;
  }
  return depth === 0 ? [...tables] : null;
}

/**
 * An nftables file that mailsvc wrote: an absolute path ending in `.nft`, no
 * `..`, at most 1 MiB, whose top-level statements all name ONE table. So the
 * helper never runs a file that flushes the ruleset or touches a second table.
 */
const nftFile: Param = {
  name: 'file',
  validate(raw) {
    if (!isAbsolute(raw) || raw.split('/').includes('..') || !/^[A-Za-z0-9/._-]+\.nft$/.test(raw)) throw new Error('file must be an absolute path to a .nft file');
    let text: string;
    try {
      if (statSync(raw).size > 1024 * 1024) throw new Error('too large');
      text = readFileSync(raw, 'utf8');
    } catch (err) {
      throw new Error(`cannot read the file: ${err instanceof Error ? err.message : String(err)}`);
    }
    const tables = nftTopTables(text);
    if (tables?.length !== 1) throw new Error('the file must only replace one nftables table (no flush ruleset, include, define or second table)');
    return raw;
  },
};

const f2b = (cfg: HelperConfig, ...args: string[]): Command => ({ file: 'fail2ban-client', args: ['-c', cfg.fail2banConfigDir, '-s', cfg.fail2banSocket, ...args], timeoutMs: 30_000 });

export const DAEMONS = ['postfix', 'dovecot', 'fail2ban', 'rspamd'] as const;
export type Daemon = (typeof DAEMONS)[number];

/** 1 to QUEUE_ID_BATCH Postfix queue ids, comma-separated, each checked by the validator the API uses. */
const queueIds: Param = { name: 'ids', validate: parseQueueIdList };

/** postsuper with one flag per id: `-c DIR -h ID1 -h ID2 …` (no queue name: every queue is searched). */
const postsuper = (flag: string) => (args: readonly string[], cfg: HelperConfig): Command => ({
  file: 'postsuper',
  args: ['-c', cfg.postfixConfigDir, ...(args[0] ?? '').split(',').flatMap((id) => [flag, id])],
});

/** What postsuper does per flag; it reports its count on stderr ("postsuper: Deleted: 2 messages"), exit 0 even for none. */
const POSTSUPER: readonly [string, string, string][] = [
  ['postsuper-hold', '-h', 'put messages on hold'],
  ['postsuper-release', '-H', 'release messages from hold'],
  ['postsuper-delete', '-d', 'delete messages (silently: no notice to the sender)'],
  ['postsuper-expire', '-f', 'expire messages and release them from hold: the queue manager returns them to their senders'],
];

const dovecotConf = (cfg: HelperConfig): string[] => (cfg.dovecotConfig ? ['-c', cfg.dovecotConfig] : []);

const RELOAD: Record<Daemon, (cfg: HelperConfig) => Command> = {
  postfix: (cfg) => ({ file: 'postfix', args: ['-c', cfg.postfixConfigDir, 'reload'] }),
  dovecot: (cfg) => ({ file: cfg.doveadm, args: [...dovecotConf(cfg), 'reload'] }),
  fail2ban: (cfg) => ({ file: 'fail2ban-client', args: ['-c', cfg.fail2banConfigDir, '-s', cfg.fail2banSocket, 'reload'] }),
  // Rspamd re-reads its configuration on SIGHUP to its main process, which Debian's unit sends as ExecReload.
  rspamd: () => ({ file: 'systemctl', args: ['reload', 'rspamd.service'], timeoutMs: 30_000 }),
};

/**
 * The fixed list of what the helper does as root. A new action is one entry
 * here: its parameters (each with the validator the API uses for that kind of
 * value) and the argv it runs. Nothing else can run.
 */
export const ACTIONS: ReadonlyMap<string, ActionSpec> = new Map<string, ActionSpec>([
  [
    'doveadm-kick',
    {
      summary: "end a mail user's open IMAP and POP sessions (exit 68: nobody was connected)",
      params: [mailUser],
      // `--`: a valid address may begin with "-"; doveadm must not read it as an option.
      command: ([user], cfg) => ({ file: cfg.doveadm, args: [...dovecotConf(cfg), 'kick', '--', user ?? ''], okCodes: [0, 68] }),
    },
  ],
  [
    'reload',
    {
      summary: `reload one daemon's configuration: ${DAEMONS.join(', ')}`,
      params: [oneOf('daemon', DAEMONS)],
      command: ([daemon], cfg) => RELOAD[daemon as Daemon](cfg),
    },
  ],
  ...POSTSUPER.map(([name, flag, what]): [string, ActionSpec] => [
    name,
    { summary: `postsuper ${flag}: ${what}; <ids> is 1 to ${QUEUE_ID_BATCH} queue ids, comma-separated`, params: [queueIds], command: postsuper(flag) },
  ]),
  [
    'f2b-status',
    { summary: "list fail2ban's jails (fail2ban-client status)", params: [], command: (_args, cfg) => f2b(cfg, 'status') },
  ],
  [
    'f2b-jail-bans',
    {
      summary: 'the addresses one jail bans, with their times (get <jail> banip --with-time)',
      params: [jail],
      command: ([j], cfg) => f2b(cfg, 'get', j ?? '', 'banip', '--with-time'),
    },
  ],
  [
    'f2b-ignoreip',
    { summary: "the addresses one jail never bans (get <jail> ignoreip)", params: [jail], command: ([j], cfg) => f2b(cfg, 'get', j ?? '', 'ignoreip') },
  ],
  [
    'f2b-banned',
    { summary: 'the jails that ban one address (banned <ip>)', params: [ipNet], command: ([ip], cfg) => f2b(cfg, 'banned', ip ?? '') },
  ],
  [
    'f2b-ban',
    { summary: 'ban an address or network in one jail (set <jail> banip <ip>)', params: [jail, ipNet], command: ([j, ip], cfg) => f2b(cfg, 'set', j ?? '', 'banip', ip ?? '') },
  ],
  [
    'f2b-unban',
    { summary: 'lift the ban of an address or network in one jail (set <jail> unbanip <ip>)', params: [jail, ipNet], command: ([j, ip], cfg) => f2b(cfg, 'set', j ?? '', 'unbanip', ip ?? '') },
  ],
  [
    'nft-check',
    { summary: 'check an nftables file without applying it (nft -c -f <file>)', params: [nftFile], command: ([f]) => ({ file: 'nft', args: ['-c', '-f', f ?? ''], timeoutMs: 30_000 }) },
  ],
  [
    'nft-apply',
    { summary: 'apply an nftables file as one transaction (nft -f <file>)', params: [nftFile], command: ([f]) => ({ file: 'nft', args: ['-f', f ?? ''], timeoutMs: 30_000 }) },
  ],
  [
    'postfix-status',
    // Exit 1: not running (or not installed as configured); the caller reads the code, so both are a result.
    { summary: 'whether Postfix runs (postfix status: exit 0 running, 1 not)', params: [], command: (_args, cfg) => ({ file: 'postfix', args: ['-c', cfg.postfixConfigDir, 'status'], okCodes: [0, 1], timeoutMs: 30_000 }) },
  ],
  [
    'postfix-stop',
    { summary: 'stop Postfix (no mail accepted) around a restore', params: [], command: (_args, cfg) => ({ file: 'postfix', args: ['-c', cfg.postfixConfigDir, 'stop'], timeoutMs: 60_000 }) },
  ],
  [
    'postfix-start',
    { summary: 'start Postfix again after a restore', params: [], command: (_args, cfg) => ({ file: 'postfix', args: ['-c', cfg.postfixConfigDir, 'start'], timeoutMs: 60_000 }) },
  ],
  [
    'nft-list-ruleset',
    { summary: 'the whole nftables ruleset as JSON (nft -j list ruleset), read only', params: [], command: () => ({ file: 'nft', args: ['-j', 'list', 'ruleset'], timeoutMs: 30_000 }) },
  ],
]);
