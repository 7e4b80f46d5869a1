import { parseLooseNet } from './ip-net.js';

/**
 * The address a CLI caller came from: the first word of SSH_CLIENT or
 * SSH_CONNECTION ("<client ip> <client port> …"); null on a local terminal.
 */
export function sshCaller(env: NodeJS.ProcessEnv): string | null {
  for (const v of [env.SSH_CLIENT, env.SSH_CONNECTION]) {
    const ip = v?.trim().split(/\s+/)[0];
    if (ip && parseLooseNet(ip)) return ip;
  }
  return null;
}
