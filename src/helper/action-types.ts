import type { HelperResult } from '../adapters/helper-client.js';
import type { HelperSettings } from '../config/helper-settings.js';

/** The helper's own settings that actions read (paths and config dirs; never from a caller). */
export type HelperConfig = Pick<HelperSettings, 'doveadm' | 'dovecotConfig' | 'postfixConfigDir' | 'fail2banSocket' | 'fail2banConfigDir' | 'rspamdLocalDir' | 'nftTable' | 'jails' | 'authLog'> &
  Partial<Pick<HelperSettings, 'serviceManager'>>;

/** One argument: a name for messages, and a validator (given the helper's own settings) that returns the canonical value or throws. */
export type Param = { name: string; validate(raw: string, cfg: HelperConfig): string; secret?: boolean };

/** The program to run: argv only, no shell. */
export type Command = { file: string; args: string[]; okCodes?: number[]; timeoutMs?: number };

/**
 * An action runs one program (`command`), or is done by the helper itself
 * (`run`: file operations that no program does safely, such as refusing to
 * follow a symlink). Both receive only values that passed `params`' validators, in order.
 */
export type ActionSpec =
  | { summary: string; params: readonly Param[]; command(args: readonly string[], cfg: HelperConfig): Command }
  | { summary: string; params: readonly Param[]; run(args: readonly string[], cfg: HelperConfig): Promise<HelperResult> };

