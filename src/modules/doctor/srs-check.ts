import { tcpTableGet } from '../../adapters/postsrsd/postsrsd.js';
import type { Finding } from './run.js';

const SYNC = 'run mailsvc dns sync-srs (it writes postsrsd\'s excluded domains, restarts it and checks it live)';
/** How many domains are asked at once (postsrsd answers one connection at a time). */
const AT_ONCE = 8;

/**
 * postsrsd's excluded domains against the active domains, asked live on its
 * forward table: a sender of each active domain must come back unchanged
 * (500), never SRS-rewritten (200). A domain change that postsrsd could not
 * follow at once (docs/dns.md, SRS) shows here until a sync succeeds.
 */
export async function srsCheck(enabled: boolean, forward: { host: string; port: number }, domains: () => Promise<string[]>, ms: number): Promise<Finding> {
  if (!enabled) return { status: 'ok', detail: 'off (MAILSVC_ENABLE_SRS is off)', fix: null };
  const names = [...new Set((await domains()).map((d) => d.toLowerCase()))].sort();
  if (names.length === 0) return { status: 'ok', detail: 'no active domain yet', fix: null };
  const where = `${forward.host}:${forward.port}`;
  const rewritten: string[] = [];
  try {
    for (let i = 0; i < names.length; i += AT_ONCE) {
      const answers = await Promise.all(names.slice(i, i + AT_ONCE).map(async (d) => ({ d, a: await tcpTableGet(forward.host, forward.port, `postmaster@${d}`, ms) })));
      rewritten.push(...answers.filter((x) => x.a.code === 200).map((x) => x.d));
    }
  } catch (err) {
    return { status: 'fail', detail: `postsrsd does not answer on ${where}: ${err instanceof Error ? err.message : String(err)}`, fix: 'start postsrsd (systemctl enable --now postsrsd), or correct MAILSVC_POSTSRSD_FORWARD' };
  }
  if (rewritten.length > 0) {
    const list = rewritten.slice(0, 10).join(', ') + (rewritten.length > 10 ? ` and ${rewritten.length - 10} more` : '');
    return { status: 'fail', detail: `postsrsd rewrites the senders of ${rewritten.length} active domain${rewritten.length === 1 ? '' : 's'} (${list}): its excluded domains lag behind the domains`, fix: SYNC };
  }
  return { status: 'ok', detail: `postsrsd on ${where} keeps the senders of all ${names.length} active domain${names.length === 1 ? '' : 's'}`, fix: null };
}
