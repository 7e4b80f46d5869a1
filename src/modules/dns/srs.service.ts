import { existsSync, statSync } from 'node:fs';
import { LocalFileHost, applyConfig } from '../../adapters/config-applier/index.js';
import type { ConfigFileHost, DaemonReloader } from '../../adapters/config-applier/index.js';
import { postsrsdChecker, readExcludeDomains, setExcludeDomains, tcpTableGet } from '../../adapters/postsrsd/postsrsd.js';
import type { DnsServer } from '../../adapters/dns/dns-client.js';
import { AppError } from '../../shared/errors.js';

export type SrsResult = { excluded: string[]; changed: boolean; restarted: boolean; verified: { local: string | null; foreign: string | null } };

export type SrsDeps = {
  /** The active domains in the database. */
  activeDomains: () => Promise<string[]>;
  defaultsFile: string;
  forward: DnsServer;
  /** Restarts postsrsd (default: the helper's restart-postsrsd). */
  restarter: DaemonReloader;
  host?: ConfigFileHost;
};

const FOREIGN = 'mailsvc-srs-check@example.com';

/**
 * "sync SRS domains": postsrsd's excluded domains (its SRS_EXCLUDE_DOMAINS)
 * are exactly the active domains, so local senders keep their address and
 * forwarded mail of others is rewritten. Written only when the list changed
 * (config applier: sh -n, rename, restart, restore on failure), then checked
 * live on postsrsd's forward table.
 */
export class SrsService {
  constructor(private readonly d: SrsDeps) {}

  async sync(): Promise<SrsResult> {
    const domains = [...new Set((await this.d.activeDomains()).map((x) => x.toLowerCase()))].sort();
    const host = this.d.host ?? new LocalFileHost();
    if (!existsSync(this.d.defaultsFile)) throw new AppError('bad_request', `${this.d.defaultsFile} does not exist: install postsrsd (apt install postsrsd) or set MAILSVC_POSTSRSD_DEFAULTS`);
    const current = (await host.read(this.d.defaultsFile))?.content.toString('utf8') ?? '';
    const before = readExcludeDomains(current);
    const changed = before === null || before.join(',') !== domains.join(',');
    let restarted = false;
    if (changed) {
      const mode = statSync(this.d.defaultsFile).mode & 0o7777;
      const r = await applyConfig([{ daemon: 'postsrsd', files: [{ path: this.d.defaultsFile, content: setExcludeDomains(current, domains), mode }], checker: postsrsdChecker(), reload: true }], host, this.d.restarter);
      if (!r.ok) throw new AppError('conflict', `sync SRS domains: ${r.stage} failed: ${r.detail}.${r.restoreErrors.length ? ` Restoring failed: ${r.restoreErrors.join('; ')}` : ' The file was restored.'}`);
      restarted = r.reloaded.includes('postsrsd');
    }
    return { excluded: domains, changed, restarted, verified: await this.verify(domains) };
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
