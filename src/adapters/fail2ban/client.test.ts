import { describe, expect, it } from 'vitest';
import { parseBanList, parseBannedJails, parseIgnoreIp, parseStatus } from './client.js';

// The outputs below are what fail2ban-client 1.0.2 prints (bans.int.test.ts
// runs the real server); the odd cases are what the parsers must survive.
describe('fail2ban-client output parsers', () => {
  it('status: the jail list, or none', () => {
    expect(parseStatus('Status\n|- Number of jail:\t2\n`- Jail list:\tdovecot, sshd\n')).toEqual(['dovecot', 'sshd']);
    expect(parseStatus('Status\n|- Number of jail:\t0\n`- Jail list:\t\n')).toEqual([]);
    expect(() => parseStatus('ERROR  Failed to access socket path')).toThrow(/unexpected fail2ban-client status output/);
  });

  it('banip --with-time: times read as local time; a ban without end has no expiry; bare addresses have no times', () => {
    const bans = parseBanList(
      '203.0.113.5 \t2026-11-23 14:04:06 + 600 = 2026-11-23 14:14:06\n' +
        '2001:db8::/64 \t2026-11-23 14:04:06 + -1 = 9999-12-31 23:59:59\n' +
        '\n198.51.100.9\ngarbage line here\n',
    );
    expect(bans.map((b) => b.ip)).toEqual(['203.0.113.5', '2001:db8::/64', '198.51.100.9']);
    expect(bans[0]?.bannedAt?.getTime()).toBe(new Date(2026, 10, 23, 14, 4, 6).getTime());
    expect(bans[0]?.expiresAt?.getTime()).toBe(new Date(2026, 10, 23, 14, 14, 6).getTime());
    expect(bans[1]?.expiresAt).toBeNull();
    expect(bans[2]).toEqual({ ip: '198.51.100.9', bannedAt: null, expiresAt: null });
    expect(parseBanList('203.0.113.5 198.51.100.0/24\n').map((b) => b.ip)).toEqual(['203.0.113.5', '198.51.100.0/24']);
    expect(parseBanList('')).toEqual([]);
  });

  it('ignoreip: the tree lines, or nothing', () => {
    expect(parseIgnoreIp('These IP addresses/networks are ignored:\n|- 127.0.0.0/8\n|- 192.0.2.0/24\n`- ::1\n')).toEqual(['127.0.0.0/8', '192.0.2.0/24', '::1']);
    expect(parseIgnoreIp('No IP address/network is ignored\n')).toEqual([]);
  });

  it('banned <ip>: jail names from the Python list', () => {
    expect(parseBannedJails("[['sshd', 'dovecot']]\n")).toEqual(['sshd', 'dovecot']);
    expect(parseBannedJails('[[]]\n')).toEqual([]);
    expect(parseBannedJails('[["nginx-http-auth"]]')).toEqual(['nginx-http-auth']);
  });
});
