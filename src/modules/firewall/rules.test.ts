import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findProgram } from '../../../test/helpers/mail-daemons.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { compileRuleset, parseFirewallState, parsePorts, parseRules } from './rules.js';
import type { FirewallState } from './rules.js';

const haveNft = findProgram('nft') !== null && findProgram('unshare') !== null;
if (!haveNft) skipNotice('nft and unshare', 'not installed');

const STATE: FirewallState = {
  'firewall-enabled': 'yes',
  'firewall-rules-json': [
    { ports: 'ssh mail 8000-8100', protocol: 'tcp', source: '', enabled: 'yes' },
    { ports: '53', protocol: 'udp', source: '2001:db8::/64', enabled: 'yes' },
    { ports: 'web', protocol: 'tcp', source: '10.0.0.0/8', enabled: 'no' },
  ],
};

describe('firewall rules', () => {
  it('ports: numbers, ranges and the groups mail, web, ssh', () => {
    expect(parsePorts('mail', 'p')).toEqual([25, 465, 587, 110, 995, 143, 993, 4190].map((p) => [p, p]));
    expect(parsePorts(' 22  8000-8100 web ', 'p')).toEqual([[22, 22], [8000, 8100], [80, 80], [443, 443]]);
    for (const bad of ['', '0', '65536', '80-80', '90-80', 'smtp', '22,25', '-1', '1e3']) expect(() => parsePorts(bad, 'p'), bad).toThrow();
  });

  it('rules: every field checked, the error names it', () => {
    expect(parseRules([{ ports: ' 22 ', protocol: 'tcp', source: '2001:DB8::/64', enabled: 'yes' }])).toEqual([{ ports: '22', protocol: 'tcp', source: '2001:db8::/64', enabled: 'yes' }]);
    const cases: [unknown, string][] = [
      [{}, 'firewall-rules-json'],
      [[{ ports: 'x', protocol: 'tcp', source: '', enabled: 'yes' }], 'firewall-rules-json[0].ports'],
      [[{ ports: '22', protocol: 'icmp', source: '', enabled: 'yes' }], 'firewall-rules-json[0].protocol'],
      [[{ ports: '22', protocol: 'tcp', source: '10.0.0.1/8', enabled: 'yes' }], 'firewall-rules-json[0].source'],
      [[{ ports: '22', protocol: 'tcp', source: 'any', enabled: 'yes' }], 'firewall-rules-json[0].source'],
      [[{ ports: '22', protocol: 'tcp', source: '', enabled: 'true' }], 'firewall-rules-json[0].enabled'],
      [[{ ports: '22', protocol: 'tcp', source: '', enabled: 'yes', action: 'drop' }], 'firewall-rules-json[0].action'],
    ];
    for (const [raw, path] of cases) expect(() => parseRules(raw), path).toThrow(new RegExp(`^${path.replace(/[[\]]/g, '\\$&')}: `));
  });

  it('compiles to one file that replaces only its table; disabled rules are left out', () => {
    const text = compileRuleset('inet mailsvc', STATE);
    expect(text.split('\n').filter((l) => /^\S/.test(l))).toEqual(['table inet mailsvc {}', 'delete table inet mailsvc', 'table inet mailsvc {', '}']);
    expect(text.startsWith('table inet mailsvc {}\ndelete table inet mailsvc\ntable inet mailsvc {\n')).toBe(true);
    expect(text).toContain('tcp dport { 22, 25, 465, 587, 110, 995, 143, 993, 4190, 8000-8100 } accept');
    expect(text).toContain('ip6 saddr 2001:db8::/64 udp dport { 53 } accept');
    expect(text).not.toContain('10.0.0.0/8');
    expect(text).toContain('policy drop;');
    expect(compileRuleset('inet mailsvc', { ...STATE, 'firewall-enabled': 'no' })).toBe('table inet mailsvc {}\ndelete table inet mailsvc\n');
  });

  it('a whole state (what the helper takes): both keys, no other, each rule checked; canonical form back', () => {
    const raw = { 'firewall-enabled': 'yes', 'firewall-rules-json': [{ ports: ' 22  web ', protocol: 'tcp', source: '2001:DB8::/64', enabled: 'yes' }] };
    expect(parseFirewallState(raw)).toEqual({ 'firewall-enabled': 'yes', 'firewall-rules-json': [{ ports: '22 web', protocol: 'tcp', source: '2001:db8::/64', enabled: 'yes' }] });
    const cases: [unknown, string][] = [
      [[], 'state'],
      [null, 'state'],
      [{ 'firewall-rules-json': [] }, 'firewall-enabled'],
      [{ 'firewall-enabled': 'yes' }, 'firewall-rules-json'],
      [{ 'firewall-enabled': 'yes', 'firewall-rules-json': [], ruleset: 'flush ruleset' }, 'ruleset'],
      [{ 'firewall-enabled': 'yes\nflush ruleset', 'firewall-rules-json': [] }, 'firewall-enabled'],
      [{ 'firewall-enabled': 'yes', 'firewall-rules-json': [{ ports: '22 } include "/etc/shadow"', protocol: 'tcp', source: '', enabled: 'yes' }] }, 'firewall-rules-json[0].ports'],
    ];
    for (const [value, path] of cases) expect(() => parseFirewallState(value), path).toThrow(new RegExp(`^${path.replace(/[[\]]/g, '\\$&')}: `));
  });

  // In a network namespace of its own (unshare -rn): never the machine's ruleset.
  it.skipIf(!haveNft)('nft accepts the file, applies it twice (replace, not add), and a failing file leaves the table as it was', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-nft-'));
    try {
      const good = join(dir, 'good.nft');
      const bad = join(dir, 'bad.nft');
      writeFileSync(good, compileRuleset('inet mailsvc', STATE));
      writeFileSync(bad, compileRuleset('inet mailsvc', { ...STATE, 'firewall-rules-json': [] }).replace('policy drop;', 'policy drop;\n\t\ttcp dport { 99999 } accept'));
      const script = `nft -f ${good} && nft -f ${good} && (nft -f ${bad} 2>/dev/null; echo bad=$?) && nft -j list ruleset`;
      const out = execFileSync('unshare', ['-rn', 'sh', '-c', script], { encoding: 'utf8', timeout: 30_000 });
      expect(out).toMatch(/bad=1/);
      const json = JSON.parse(out.split('\n').filter((l) => l.startsWith('{')).join('')) as { nftables: Record<string, { family?: string; name?: string }>[] };
      expect(json.nftables.filter((o) => o.table).map((o) => `${o.table?.family} ${o.table?.name}`)).toEqual(['inet mailsvc']);
      expect(json.nftables.filter((o) => o.chain)).toHaveLength(1);
      expect(json.nftables.filter((o) => o.rule)).toHaveLength(6);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
