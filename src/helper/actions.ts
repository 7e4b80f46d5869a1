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
]);
