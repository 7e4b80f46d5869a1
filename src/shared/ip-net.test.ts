import { describe, expect, it } from 'vitest';
import { overlaps, parseIpNet, parseLooseNet } from './ip-net.js';

describe('parseIpNet (what a ban, the helper and a firewall source accept)', () => {
  it('canonical addresses and networks at their base address', () => {
    expect(parseIpNet('203.0.113.5')?.text).toBe('203.0.113.5');
    expect(parseIpNet('2001:DB8:0:0::1')?.text).toBe('2001:db8::1');
    expect(parseIpNet('2001:db8:1::/64')?.text).toBe('2001:db8:1::/64');
    expect(parseIpNet('10.1.2.0/24')).toMatchObject({ text: '10.1.2.0/24', bits: 24, kind: 'ipv4', single: false });
    expect(parseIpNet('10.1.2.3/32')?.text).toBe('10.1.2.3');
    expect(parseIpNet('::ffff:127.0.0.1')?.text).toBe('127.0.0.1');
  });

  it('refuses anything else: short, octal-looking or hex IPv4, zones, host bits, options, names', () => {
    for (const bad of ['', '1.2.3', '010.0.0.1', '0x7f.0.0.1', '256.1.1.1', 'fe80::1%eth0', '10.0.0.1/24', '10.0.0.0/33', '10.0.0.0/', '-h', 'example.org', '1.2.3.4/24/1', '::ffff:10.0.0.0/104', ' '.repeat(3)]) {
      expect(parseIpNet(bad), bad).toBeNull();
    }
  });

  it('overlaps: an address in a network, a network holding another, never across families', () => {
    const n = (s: string) => parseLooseNet(s) ?? (() => { throw new Error(s); })();
    expect(overlaps(n('10.0.0.0/8'), n('10.9.9.9'))).toBe(true);
    expect(overlaps(n('10.9.9.9'), n('10.0.0.0/8'))).toBe(true);
    expect(overlaps(n('10.0.0.0/24'), n('10.0.1.0/24'))).toBe(false);
    expect(overlaps(n('::1'), n('127.0.0.1'))).toBe(false);
    expect(n('192.0.2.77/24').text).toBe('192.0.2.77/24');
  });
});
