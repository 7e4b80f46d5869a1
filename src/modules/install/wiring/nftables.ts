import { statSync } from 'node:fs';
import { nftablesChecker } from '../../../adapters/config-applier/index.js';
import type { RenderedFile } from '../../../adapters/config-applier/index.js';
import { current } from './common.js';
import type { DaemonPlan, WiringContext } from './types.js';

/**
 * Debian's /etc/nftables.conf starts with `flush ruleset`: every start or
 * reload of nftables.service would drop fail2ban's and mailsvc's tables.
 * Each flush is replaced by deleting only the tables the file itself
 * declares (declared first, so the delete works when the table is not there).
 */
export function withoutFlush(text: string): string {
  const tables = [...new Set([...text.matchAll(/^\s*table\s+(ip|ip6|inet|arp|bridge|netdev)\s+([A-Za-z0-9_-]+)/gm)].map((m) => `${m[1]} ${m[2]}`))];
  const replacement = [
    '# mailsvc: only the tables of this file are replaced; fail2ban\'s and mailsvc\'s own tables stay.',
    ...tables.flatMap((t) => [`table ${t}`, `delete table ${t}`]),
  ].join('\n');
  return text.replace(/^\s*flush\s+ruleset\s*;?\s*$/gm, replacement);
}

/** nftables: enabled at boot, and its configuration unable to flush other tables. */
export function planNftables(ctx: WiringContext): DaemonPlan {
  const path = ctx.paths.nftablesConf;
  const now = current(path);
  const files: RenderedFile[] = [];
  if (now !== null && withoutFlush(now) !== now) {
    const mode = statSync(path).mode & 0o7777;
    files.push({ path, content: withoutFlush(now), mode });
    if (current(`${path}.mailsvc-orig`) === null) files.push({ path: `${path}.mailsvc-orig`, content: now, mode });
  }
  return {
    daemon: 'nftables',
    before: [],
    files,
    checker: nftablesChecker(ctx.exec),
    after: [{ what: 'nftables.service enabled and started (systemctl enable --now nftables)', run: (h) => h.enableUnit('nftables.service') }],
    settings: {},
    notes: now === null ? [`no ${path}: nothing to change in it`] : [],
  };
}
