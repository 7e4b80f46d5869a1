import type { HelperClient } from '../helper-client.js';
import type { FirewallState } from '../../shared/firewall-rules.js';

/** The JSON of `nft -j list ruleset`: a list of objects, one key each (`metainfo`, `table`, `chain`, `rule` …). */
export type NftJson = { nftables: Record<string, Record<string, unknown>>[] };

/**
 * nftables through the privileged helper. The firewall travels as data (its
 * settings, checked again by the helper with the same parser); the helper
 * renders mailsvc's table from them itself, checks it (`nft -c -f`) and
 * applies it (`nft -f`) as one transaction, so a refused ruleset leaves the
 * running one as it was. No file is written on this side.
 */
export class NftClient {
  constructor(private readonly helper: HelperClient) {}

  async apply(state: FirewallState): Promise<void> {
    await this.helper.run('firewall-apply', [JSON.stringify(state)]);
  }

  async listRuleset(): Promise<NftJson> {
    const out = (await this.helper.run('nft-list-ruleset', [])).stdout;
    const parsed = JSON.parse(out) as unknown;
    if (typeof parsed !== 'object' || parsed === null || !Array.isArray((parsed as NftJson).nftables)) throw new Error('nft -j list ruleset: unexpected output');
    return parsed as NftJson;
  }

  /** True when the table `<family> <name>` exists. */
  async hasTable(table: string): Promise<boolean> {
    const [family, name] = table.split(' ');
    return (await this.listRuleset()).nftables.some((o) => o.table !== undefined && o.table.family === family && o.table.name === name);
  }
}
