import type { HelperResult } from '../adapters/helper-client.js';
import type { HelperSettings } from '../config/helper-settings.js';

/** The helper's own settings that actions read (paths and config dirs; never from a caller). */
export type HelperConfig = Pick<HelperSettings, 'doveadm' | 'dovecotConfig' | 'postfixConfigDir' | 'fail2banSocket' | 'fail2banConfigDir' | 'rspamdLocalDir' | 'rspamdGroup' | 'postsrsdDefaults' | 'nftTable' | 'jails' | 'authLog' | 'tlsDir' | 'tlsGroup' | 'nginxConfig' | 'nginxTlsSnippet'> &
  Partial<Pick<HelperSettings, 'serviceManager'>>;

/** One argument: a name for messages, and a validator (given the helper's own settings) that returns the canonical value or throws. */
export type Param = {
  name: string;
  validate(raw: string, cfg: HelperConfig): string;
  /** Logged as `[redacted]`; its validator's message is replaced by "invalid value" unless `safeMessage`. */
  secret?: boolean;
  /** The validator's messages never quote the value: they may be shown even for a secret. */
  safeMessage?: boolean;
};

/** The program to run: argv only, no shell. */
export type Command = { file: string; args: string[]; okCodes?: number[]; timeoutMs?: number };

/** The helper's own log (root's journal): where a failed program's output goes, never into a reply. */
export type ActionLog = { warn(fields: Record<string, unknown>, msg: string): void };

/** What a `run` action gets besides its arguments: the log, and a signal that fires at its deadline. */
export type RunContext = { log: ActionLog; signal: AbortSignal };

/**
 * An action runs one program (`command`), or is done by the helper itself
 * (`run`: file operations that no program does safely, such as refusing to
 * follow a symlink). Both receive only values that passed `params`' validators, in order.
 */
export type ActionSpec = (
  | { summary: string; params: readonly Param[]; command(args: readonly string[], cfg: HelperConfig): Command }
  | { summary: string; params: readonly Param[]; run(args: readonly string[], cfg: HelperConfig, ctx: RunContext): Promise<HelperResult> }
) & {
  /**
   * A `run` action's deadline (default 5 minutes): past it the caller gets
   * `failed` (`exec.kind` `timeout`) and the signal in its context fires, so
   * a stuck action never holds a connection.
   */
  deadlineMs?: number;
  /** The longest argument it takes (default 4096 characters; at most what fits a 64 KiB request line). */
  maxArgLength?: number;
  /**
   * Every directory the action (or a program it runs) creates, replaces or
   * deletes files in, from the helper's own settings: the helper's systemd
   * unit must let it write exactly these (test/helper-unit-paths.test.ts
   * checks deploy/systemd/mailsvc-helper.service against them). `[]`: it
   * writes nothing on disk (signals, sockets, systemctl).
   */
  writes(cfg: HelperConfig): readonly string[];
  /**
   * Asked when the program failed or gave an accepted non-zero code, on the helper's own settings (never a path
   * from the caller): the fixed sentence when the daemon the action needs is
   * absent (not set up, its socket missing), so the reply is `unavailable`
   * rather than `failed`; null when the daemon is there (the failure stands).
   */
  absent?(args: readonly string[], cfg: HelperConfig): string | null;
};

