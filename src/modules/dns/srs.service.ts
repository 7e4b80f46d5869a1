import type { HelperClient } from '../../adapters/helper-client.js';
import { tcpTableGet } from '../../adapters/postsrsd/postsrsd.js';
import { HELPER_LIST_ARG_MAX } from '../../shared/dkim-names.js';
import type { DnsServer } from '../../adapters/dns/dns-client.js';
import { AppError } from '../../shared/errors.js';

export type SrsResult = { excluded: string[]; changed: boolean; restarted: boolean; verified: { local: string | null; foreign: string | null } };

export type SrsDeps = {
  /** The active domains in the database. */
  activeDomains: () => Promise<string[]>;
  forward: DnsServer;
  /** The root helper: its `srs-domains-apply` writes postsrsd's settings and restarts it. */
  helper: HelperClient;
};

const FOREIGN = 'mailsvc-srs-check@example.com';

/**
 * "sync SRS domains": postsrsd's excluded domains (its SRS_EXCLUDE_DOMAINS)
 * are exactly the active domains, so local senders keep their address and
 * forwarded mail of others is rewritten. The root helper writes the file only
 * when the list changed (config applier: sh -n, rename, restart, restore on
 * failure); then the list is checked live on postsrsd's forward table.
 */
export class SrsService {
  constructor(private readonly d: SrsDeps) {}

  async sync(): Promise<SrsResult> {
    const domains = [...new Set((await this.d.activeDomains()).map((x) => x.toLowerCase()))].sort();
    const list = domains.join(',');
    if (list.length > HELPER_LIST_ARG_MAX) throw new AppError('conflict', `sync SRS domains: ${domains.length} domains do not fit one update (${list.length} characters, at most ${HELPER_LIST_ARG_MAX})`);
    const { stdout } = await this.d.helper.run('srs-domains-apply', [list]);
    let r: { ok?: unknown; status?: unknown; detail?: unknown; changed?: unknown; restarted?: unknown };
    try {
      r = JSON.parse(stdout) as typeof r;
    } catch {
      throw new AppError('upstream', 'sync SRS domains: the helper answered something unexpected');
    }
    const detail = typeof r.detail === 'string' ? r.detail : 'refused';
    if (r.status === 'missing') throw new AppError('bad_request', detail);
    if (r.ok !== true) throw new AppError('conflict', `sync SRS domains: ${detail}`);
    return { excluded: domains, changed: r.changed === true, restarted: r.restarted === true, verified: await this.verify(domains) };
  }

  /** A local domain must come back unchanged (500), a foreign address rewritten (200 SRS0=…). */
  private async verify(domains: readonly string[]): Promise<SrsResult['verified']> {
    const { host, port } = this.d.forward;
    const ask = async (key: string) => {
      // postsrsd takes a moment to listen again after a restart.
      for (let i = 0; ; i++) {
        try {
          return await tcpTableGet(host, port, key);
        } catch (err) {
          if (i >= 50) throw new AppError('unavailable', `postsrsd does not answer on ${host}:${port} (${err instanceof Error ? err.message : String(err)}): check that it runs`);
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    };
    const local = domains[0] === undefined ? null : await ask(`postmaster@${domains[0]}`);
    if (local && local.code === 200) throw new AppError('conflict', `postsrsd still rewrites ${domains[0]} (${local.text}): it did not take the new excluded domains`);
    const foreign = await ask(FOREIGN);
    if (foreign.code !== 200 || !/^SRS0[=+-]/i.test(foreign.text)) throw new AppError('conflict', `postsrsd did not rewrite a foreign sender (${foreign.code} ${foreign.text})`);
    return { local: local ? `${local.code} ${local.text}` : null, foreign: foreign.text };
  }
}
