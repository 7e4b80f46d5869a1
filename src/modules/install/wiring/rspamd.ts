import { dirname, join } from 'node:path';
import { rspamdChecker } from '../../../adapters/config-applier/index.js';
import { current } from './common.js';
import type { DaemonPlan, WiringContext } from './types.js';

export const WORKER_PROXY = [
  '# mailsvc (written by mailsvc install): Postfix hands every message to this proxy as a milter',
  '# (smtpd_milters = inet:127.0.0.1:11332): spam checks, and DKIM signing with the keys mailsvc',
  '# installs per domain (local.d/dkim_signing.conf, rendered when a domain gets DKIM keys).',
  'milter = yes;',
  '',
].join('\n');

/**
 * Rspamd: its proxy worker in milter mode for Postfix (Debian's default, made
 * explicit and checked). DKIM signing is mailsvc's own local.d/dkim_signing.conf,
 * which the DNS feature renders from the keys in the database.
 */
export function planRspamd(ctx: WiringContext): DaemonPlan {
  const path = join(ctx.paths.rspamdLocalDir, 'worker-proxy.inc');
  const now = current(path);
  const theirs = now !== null && !now.includes('mailsvc install');
  return {
    daemon: 'rspamd',
    before: [],
    files: theirs ? [] : [{ path, content: WORKER_PROXY, mode: 0o644 }],
    checker: rspamdChecker(dirname(ctx.paths.rspamdLocalDir), ctx.exec),
    after: [],
    settings: {},
    notes: theirs ? [`${path} is not mailsvc's: kept as it is (it must keep milter = yes for Postfix's milter on 127.0.0.1:11332)`] : [],
  };
}
