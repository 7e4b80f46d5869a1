import { lstatSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { notRunning, postfixNotConfigured } from '../shared/daemon-hints.js';
import type { HelperConfig } from './action-types.js';

/**
 * What an action needs of its daemon, checked on the helper's own settings
 * when its program failed, so that an absent daemon is told apart from a
 * program that failed: the reply is `unavailable` with a fixed sentence.
 */

const isSocket = (path: string): boolean => {
  try {
    return lstatSync(path).isSocket();
  } catch {
    return false;
  }
};

const isFile = (path: string): boolean => {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
};

/** fail2ban-client only talks to a running server: its socket (MAILSVC_FAIL2BAN_SOCKET) must be there. */
export function fail2banRunning(_args: readonly string[], cfg: HelperConfig): string | null {
  return isSocket(cfg.fail2banSocket) ? null : notRunning('fail2ban', `no socket at ${cfg.fail2banSocket}`);
}

/** postsuper and postfix read main.cf first: without it the package is missing or was never set up. */
export function postfixConfigured(_args: readonly string[], cfg: HelperConfig): string | null {
  return isFile(join(cfg.postfixConfigDir, 'main.cf')) ? null : postfixNotConfigured(cfg.postfixConfigDir);
}

/** `reload <daemon>`: what that daemon needs. */
export function daemonPresent(args: readonly string[], cfg: HelperConfig): string | null {
  if (args[0] === 'fail2ban') return fail2banRunning(args, cfg);
  if (args[0] === 'postfix') return postfixConfigured(args, cfg);
  return null;
}
