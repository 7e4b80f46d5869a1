import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HelperClient } from '../helper-client.js';

/** The JSON of `nft -j list ruleset`: a list of objects, one key each (`metainfo`, `table`, `chain`, `rule` …). */
export type NftJson = { nftables: Record<string, Record<string, unknown>>[] };

/**
 * nftables through the privileged helper: a ruleset file is checked
 * (`nft -c -f`) and then applied (`nft -f`) as one transaction, so a file
 * that fails leaves the running ruleset as it was. The file is written to
 * `dir` (the data directory), where the helper can read it.
 */
export class NftClient {
  constructor(private readonly helper: HelperClient, private readonly dir: string) {}

  async apply(ruleset: string): Promise<void> {
    const file = join(this.dir, `firewall-${randomBytes(6).toString('hex')}.nft`);
    writeFileSync(file, ruleset, { mode: 0o644 });
    try {
      await this.helper.run('nft-check', [file]);
      await this.helper.run('nft-apply', [file]);
    } finally {
      rmSync(file, { force: true });
    }
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
