import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The machine's own daemon configuration, which no test may change: every
 * test runs its daemons from copies in temp directories, and a helper started
 * by a test must be pointed at those copies (a helper given no
 * MAILSVC_RSPAMD_LOCAL_DIR writes the real /etc/rspamd). The backup directory and
 * the data directory are the host's too: a test app reads its backups' health there.
 */
export const HOST_PATHS = ['/etc/rspamd', '/etc/postfix', '/etc/dovecot', '/etc/fail2ban', '/etc/default/postsrsd', '/etc/nftables.conf', '/etc/mailsvc', '/etc/systemd/system', '/var/backups/mailsvc', '/var/lib/mailsvc'];

/** path → "type size mode mtime" for every entry under the host paths. */
export function hostState(paths: readonly string[] = HOST_PATHS): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (p: string): void => {
    const st = lstatSync(p);
    out.set(p, `${st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : 'f'} ${st.isDirectory() ? '' : st.size} ${st.mode.toString(8)} ${st.isDirectory() ? '' : st.mtimeMs}`);
    if (st.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
  };
  for (const p of paths) if (existsSync(p)) walk(p);
  return out;
}

/** What changed between two states: added, removed or modified paths. */
export function hostChanges(before: Map<string, string>, after: Map<string, string>): string[] {
  const changes: string[] = [];
  for (const [p, v] of after) {
    if (!before.has(p)) changes.push(`added ${p}`);
    else if (before.get(p) !== v) changes.push(`changed ${p}`);
  }
  for (const p of before.keys()) if (!after.has(p)) changes.push(`removed ${p}`);
  return changes;
}
