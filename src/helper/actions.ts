import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseIpNet } from '../shared/ip-net.js';
import { normalizeAddress } from '../shared/mail-names.js';
import { QUEUE_ID_BATCH, parseQueueIdList } from '../shared/queue-id.js';
import { limitValues } from './limits-param.js';
import { dkimActions } from './dkim-actions.js';
import { FIREWALL_STATE_MAX, firewallState } from './firewall-param.js';
import { daemonPresent, fail2banRunning, postfixConfigured } from './daemon-check.js';
import { TLS_BUNDLE_ARG_MAX, TLS_DAEMONS, certName, tlsBundle, tlsDaemon, tlsDaemons } from './tls-param.js';
import type { TlsDaemon } from './tls-param.js';
import { MAILBOX_ACTIONS } from './mailbox-actions.js';

export type { ActionSpec, Command, HelperConfig, Param } from './action-types.js';
import type { ActionSpec, Command, HelperConfig, Param } from './action-types.js';

/**
 * Postfix's queue_directory and data_directory as Debian's main.cf sets them
 * (the helper does not read main.cf for them): postsuper works in the queue,
 * `postfix status|reload|stop` lock the master's pid file there, `postfix
 * start` and `postfix check` also lock and create files in the data directory.
 */
export const POSTFIX_QUEUE_DIR = '/var/spool/postfix';
export const POSTFIX_DATA_DIR = '/var/lib/postfix';
/** Writes nothing on disk: it signals a daemon, talks to its socket, or asks systemd. */
const NOTHING = (): readonly string[] => [];
const QUEUE = (): readonly string[] => [POSTFIX_QUEUE_DIR];
/** The scratch directories (checker copies, the rendered nftables file): the unit's PrivateTmp. */
const SCRATCH = (): string => tmpdir();
/** Dovecot's conf.d beside its main file (MAILSVC_DOVECOT_CONFIG, Debian's by default), where apply-limits writes 99-mailsvc-limits.conf. */
export const dovecotConfD = (cfg: HelperConfig): string => join(dirname(cfg.dovecotConfig ?? '/etc/dovecot/dovecot.conf'), 'conf.d');

/** The only units the update verbs act on: fixed here, never taken from a caller. */
export const MAILSVC_UNIT = 'mailsvc.service';
/** The kinds of queued job a unit of their own runs as root or outside the service: fixed here, never taken from a caller. */
export const JOB_UNIT_KINDS = ['update', 'backup'] as const;
/** A template: `mailsvc-<kind>@<job id>.service` runs that one queued job (an update, or a backup/verify). */
export const mailsvcJobUnit = (kind: string, jobId: string): string => `mailsvc-${kind}@${jobId}.service`;
const jobKind: Param = {
  name: 'kind',
  validate(raw) {
    if (!(JOB_UNIT_KINDS as readonly string[]).includes(raw)) throw new Error(`kind must be one of ${JOB_UNIT_KINDS.join(', ')}`);
    return raw;
  },
};
const jobId: Param = {
  name: 'job',
  validate(raw) {
    if (!/^[a-z0-9]{1,32}$/.test(raw)) throw new Error('job must be a job id (lower-case letters and digits)');
    return raw;
  },
};
const unitCommand = (cfg: HelperConfig, verb: string, unit: string, extra: string[] = []): Command =>
  cfg.serviceManager ? { file: cfg.serviceManager, args: [verb, unit], timeoutMs: 120_000 } : { file: 'systemctl', args: [...extra, verb, unit], timeoutMs: 120_000 };

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

/** postsrsd reads its settings only at start: a restart (systemctl, or MAILSVC_SERVICE_MANAGER's program). */
const restartPostsrsd = (cfg: HelperConfig): Command => ({ ...unitCommand(cfg, 'restart', 'postsrsd.service'), timeoutMs: 30_000 });

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

/** How `tls-deploy` and `tls-rollback` make a daemon read its certificate again: a reload (nginx: `nginx -c MAILSVC_NGINX_CONFIG -s reload`). */
const TLS_RELOAD: Record<TlsDaemon, (cfg: HelperConfig) => Command> = {
  postfix: (cfg) => RELOAD.postfix(cfg),
  dovecot: (cfg) => RELOAD.dovecot(cfg),
  nginx: (cfg) => ({ file: 'nginx', args: ['-c', cfg.nginxConfig, '-s', 'reload'] }),
};
/** What `tls-deploy` writes: the certificates, each daemon's file, the checkers' scratch copies and what `postfix check` touches. */
const TLS_WRITES = (cfg: HelperConfig): readonly string[] => [cfg.tlsDir, cfg.postfixConfigDir, dovecotConfD(cfg), dirname(cfg.nginxTlsSnippet), SCRATCH(), POSTFIX_QUEUE_DIR, POSTFIX_DATA_DIR, NGINX_LOG_DIR];
/** `nginx -t` opens the log files nginx.conf names (Debian's: here). */
export const NGINX_LOG_DIR = '/var/log/nginx';

/**
 * The fixed list of what the helper does as root. A new action is one entry
 * here: its parameters (each with the validator the API uses for that kind of
 * value) and the argv it runs. Nothing else can run.
 */
export const ACTIONS: ReadonlyMap<string, ActionSpec> = new Map<string, ActionSpec>([
  [
    'doveadm-kick',
    { writes: NOTHING,
      summary: "end a mail user's open IMAP and POP sessions (exit 68: nobody was connected)",
      params: [mailUser],
      // `--`: a valid address may begin with "-"; doveadm must not read it as an option.
      command: ([user], cfg) => ({ file: cfg.doveadm, args: [...dovecotConf(cfg), 'kick', '--', user ?? ''], okCodes: [0, 68] }),
    },
  ],
  [
    'reload',
    { writes: QUEUE,
      absent: daemonPresent,
      summary: `reload one daemon's configuration: ${DAEMONS.join(', ')}`,
      params: [oneOf('daemon', DAEMONS)],
      command: ([daemon], cfg) => RELOAD[daemon as Daemon](cfg),
    },
  ],
  ...POSTSUPER.map(([name, flag, what]): [string, ActionSpec] => [
    name,
    { summary: `postsuper ${flag}: ${what}; <ids> is 1 to ${QUEUE_ID_BATCH} queue ids, comma-separated`, params: [queueIds], command: postsuper(flag), writes: QUEUE, absent: postfixConfigured },
  ]),
  [
    'f2b-status',
    { writes: NOTHING, absent: fail2banRunning, summary: "list fail2ban's jails (fail2ban-client status)", params: [], command: (_args, cfg) => f2b(cfg, 'status') },
  ],
  [
    'f2b-jail-bans',
    { writes: NOTHING, absent: fail2banRunning,
      summary: 'the addresses one jail bans, with their times (get <jail> banip --with-time)',
      params: [jail],
      command: ([j], cfg) => f2b(cfg, 'get', j ?? '', 'banip', '--with-time'),
    },
  ],
  [
    'f2b-ignoreip',
    { writes: NOTHING, absent: fail2banRunning, summary: "the addresses one jail never bans (get <jail> ignoreip)", params: [jail], command: ([j], cfg) => f2b(cfg, 'get', j ?? '', 'ignoreip') },
  ],
  [
    'f2b-banned',
    { writes: NOTHING, absent: fail2banRunning, summary: 'the jails that ban one address (banned <ip>)', params: [ipNet], command: ([ip], cfg) => f2b(cfg, 'banned', ip ?? '') },
  ],
  [
    'f2b-ban',
    { writes: NOTHING, absent: fail2banRunning, summary: 'ban an address or network in one jail (set <jail> banip <ip>)', params: [jail, ipNet], command: ([j, ip], cfg) => f2b(cfg, 'set', j ?? '', 'banip', ip ?? '') },
  ],
  [
    'f2b-unban',
    { writes: NOTHING, absent: fail2banRunning, summary: 'lift the ban of an address or network in one jail (set <jail> unbanip <ip>)', params: [jail, ipNet], command: ([j, ip], cfg) => f2b(cfg, 'set', j ?? '', 'unbanip', ip ?? '') },
  ],
  [
    'postfix-status',
    // Exit 1 is an answer (not running), not a failure; the report and topology tell it apart from "cannot tell".
    { writes: QUEUE, absent: postfixConfigured, summary: 'whether the Postfix mail system runs (postfix status: exit 0 running, 1 not)', params: [], command: (_args, cfg) => ({ file: 'postfix', args: ['-c', cfg.postfixConfigDir, 'status'], okCodes: [0, 1] }) },
  ],
  [
    'firewall-apply',
    { writes: () => [SCRATCH()],
      summary: "replace mailsvc's own nftables table (MAILSVC_NFT_TABLE) with the one the helper renders from <state> (the firewall settings as JSON, checked like the API checks them): nft -c -f, then nft -f, on a private copy",
      params: [firewallState],
      maxArgLength: FIREWALL_STATE_MAX,
      run: async (args, cfg, ctx) => (await import('./firewall-action.js')).applyFirewall(args, cfg, ctx),
    },
  ],
  [
    'mailsvc-restart',
    { writes: NOTHING, summary: `restart the API service (${MAILSVC_UNIT}) after an update switched its release; no other unit`, params: [], command: (_a, cfg) => unitCommand(cfg, 'restart', MAILSVC_UNIT) },
  ],
  [
    'mailsvc-job-start',
    { writes: NOTHING,
      summary: 'start mailsvc-<kind>@<job>.service (kind update or backup) without waiting: it runs that queued job outside the service (an update restarts it; a backup or verify writes the root-only backup directory)',
      params: [jobKind, jobId],
      command: ([kind, id], cfg) => unitCommand(cfg, 'start', mailsvcJobUnit(kind ?? '', id ?? ''), ['--no-block']),
    },
  ],
  [
    'restart-postsrsd',
    { writes: NOTHING,
      summary: 'restart postsrsd so it reads its excluded domains again (systemctl restart postsrsd.service; it reads its settings only at start)',
      params: [],
      command: (_a, cfg) => restartPostsrsd(cfg),
    },
  ],
  ...MAILBOX_ACTIONS,
  ...dkimActions({ reloadRspamd: (cfg) => RELOAD.rspamd(cfg), restartPostsrsd, scratch: SCRATCH }),
  [
    'postfix-stop',
    { writes: QUEUE, summary: 'stop Postfix (no mail accepted) around a restore', params: [], command: (_args, cfg) => ({ file: 'postfix', args: ['-c', cfg.postfixConfigDir, 'stop'], timeoutMs: 60_000 }) },
  ],
  [
    'postfix-start',
    { writes: () => [POSTFIX_QUEUE_DIR, POSTFIX_DATA_DIR], summary: 'start Postfix again after a restore', params: [], command: (_args, cfg) => ({ file: 'postfix', args: ['-c', cfg.postfixConfigDir, 'start'], timeoutMs: 60_000 }) },
  ],
  [
    'nft-list-ruleset',
    { writes: NOTHING, summary: 'the whole nftables ruleset as JSON (nft -j list ruleset), read only', params: [], command: () => ({ file: 'nft', args: ['-j', 'list', 'ruleset'], timeoutMs: 30_000 }) },
  ],
  [
    'tls-deploy',
    { writes: TLS_WRITES,
      summary: `install a certificate chain and key (JSON {chain: [base64 DER], key: base64 PKCS#8 DER}, parsed and checked: the key the leaf's, the leaf valid now) as <MAILSVC_TLS_DIR>/<name>/<sha>.chain.pem and .key.pem (key 0640 root:MAILSVC_TLS_GROUP), then point <daemons> (${TLS_DAEMONS.join(',')}) at them: each daemon's checker, rename, reload; all or nothing; the previous certificate stays for tls-rollback (JSON outcome)`,
      params: [certName, tlsDaemons, tlsBundle],
      maxArgLength: TLS_BUNDLE_ARG_MAX,
      run: async (args, cfg, ctx) => (await import('./tls-action.js')).deployCertificate((d, c) => TLS_RELOAD[d](c))(args, cfg, ctx),
    },
  ],
  [
    'tls-rollback',
    { writes: TLS_WRITES,
      summary: 'point the daemons the last tls-deploy of <name> changed back where they pointed before it (the previous certificate, kept on disk), check, reload (JSON outcome)',
      params: [certName],
      run: async (args, cfg, ctx) => (await import('./tls-action.js')).rollbackCertificate((d, c) => TLS_RELOAD[d](c))(args, cfg, ctx),
    },
  ],
  [
    'tls-restart',
    { writes: NOTHING,
      summary: `restart one daemon so it reads its certificate again where a reload did not (${TLS_DAEMONS.join(', ')}: systemctl restart <daemon>.service, or MAILSVC_SERVICE_MANAGER)`,
      params: [tlsDaemon],
      command: ([d], cfg) => ({ ...unitCommand(cfg, 'restart', `${d ?? ''}.service`), timeoutMs: 120_000 }),
    },
  ],
  [
    'apply-limits',
    { writes: (cfg) => [cfg.postfixConfigDir, cfg.rspamdLocalDir, dovecotConfD(cfg), join(cfg.fail2banConfigDir, 'jail.d'), SCRATCH(), POSTFIX_QUEUE_DIR, POSTFIX_DATA_DIR],
      summary: "render the limits into Postfix, Rspamd, Dovecot and fail2ban files, check each with its daemon's checker, reload; all or nothing (JSON outcome)",
      params: [limitValues],
      // The applier (renders, checkers, config applier) loads only when this action runs: the CLI's start-up reads this table.
      run: async (args, cfg, ctx) => (await import('./limits-action.js')).applyLimits((daemon, c) => RELOAD[daemon as Daemon](c))(args, cfg, ctx),
    },
  ],
]);
