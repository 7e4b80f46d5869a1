import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { helperConfig } from '../../test/helpers/helper-config.js';
import { HelperRunner } from './runner.js';

/**
 * nft-check / nft-apply run as root on a file the service wrote: the file may
 * replace mailsvc's own table (MAILSVC_NFT_TABLE) and nothing else — not
 * Docker's or fail2ban's table, not the whole ruleset.
 */
describe('nft-check and nft-apply touch only MAILSVC_NFT_TABLE', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-nft-actions-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const runner = new HelperRunner(helperConfig({ nftTable: 'inet mailsvc' }), pino({ level: 'silent' }));
  const file = (name: string, text: string): string => {
    const p = join(dir, `${name}.nft`);
    writeFileSync(p, text);
    return p;
  };
  const mine = 'table inet mailsvc {\n  chain input {\n    type filter hook input priority 0; policy accept;\n  }\n}\n';

  it.each([
    ['flush ruleset', `flush ruleset\n${mine}`, /only replace one nftables table/],
    ['a second table', `${mine}table inet filter {\n}\n`, /only replace one nftables table/],
    ["another table (Docker's, fail2ban's)", 'table ip nat {\n  chain POSTROUTING {\n    type nat hook postrouting priority 100;\n  }\n}\n', /mailsvc's own table "inet mailsvc".*not "ip nat"/],
    ['delete of another table', 'delete table inet f2b_table\n', /not "inet f2b_table"/],
    ['an include', `include "/etc/nftables.conf"\n${mine}`, /only replace one nftables table/],
  ])('refuses %s before nft runs', async (_what, text, why) => {
    const f = file(String(_what).replace(/\W+/g, '-'), text);
    for (const action of ['nft-check', 'nft-apply']) expect(await runner.answer(action, [f])).toMatchObject({ ok: false, error: 'invalid-argument', detail: expect.stringMatching(why) });
  });

  it('refuses a path that is not an absolute .nft file', async () => {
    for (const bad of ['rel.nft', '/etc/nftables.conf', `${dir}/../x.nft`, '-f.nft']) expect(await runner.answer('nft-apply', [bad])).toMatchObject({ ok: false, error: 'invalid-argument' });
  });
});
