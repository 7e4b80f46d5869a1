import { describe, it, expect } from 'vitest';
import { checkPublicHttpsUrl, isPublicAddress, type OutboundPolicy, type Resolver } from './address-policy.js';

const noAllow: OutboundPolicy = { allowHosts: [] };

/** Resolver that knows a few names and fails (like ENOTFOUND) for the rest. */
function fakeResolver(table: Record<string, string[]>): Resolver {
  return async (host) => {
    const found = table[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found;
  };
}

const resolver = fakeResolver({
  'private.example': ['10.1.2.3'],
  'mixed.example': ['8.8.8.8', '127.0.0.1'],
  'mapped.example': ['::ffff:192.168.0.1'],
  'public.example': ['93.184.216.34'],
  'public6.example': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
});

const PRIVATE = 'host is a private or reserved address';
const RESOLVES = 'host resolves to a private or reserved address';
const HTTPS = 'must use https';
const CREDS = 'must not contain credentials';
const QUERY = 'must not have a query or fragment';
const INVALID = 'not a valid URL';

describe('checkPublicHttpsUrl refuses', () => {
  const refused: [string, string][] = [
    ['https://127.0.0.1/', PRIVATE],
    ['https://2130706433/', PRIVATE],
    ['https://0x7f000001/', PRIVATE],
    ['https://0177.0.0.1/', PRIVATE],
    ['https://127.1/', PRIVATE],
    ['https://0x7f.1/', PRIVATE],
    ['https://10.0.0.1/', PRIVATE],
    ['https://172.16.5.4/', PRIVATE],
    ['https://192.168.1.1/', PRIVATE],
    ['https://169.254.169.254/', PRIVATE],
    ['https://100.64.0.1/', PRIVATE],
    ['https://0.0.0.0/', PRIVATE],
    ['https://0/', PRIVATE],
    ['https://224.0.0.1/', PRIVATE],
    ['https://255.255.255.255/', PRIVATE],
    ['https://192.0.2.1/', PRIVATE],
    ['https://[::1]/', PRIVATE],
    ['https://[::]/', PRIVATE],
    ['https://[fe80::1]/', PRIVATE],
    ['https://[fc00::1]/', PRIVATE],
    ['https://[fd12::1]/', PRIVATE],
    ['https://[ff02::1]/', PRIVATE],
    ['https://[::ffff:127.0.0.1]/', PRIVATE],
    ['https://[::ffff:7f00:1]/', PRIVATE],
    ['https://[::ffff:10.0.0.1]/', PRIVATE],
    ['https://[0:0:0:0:0:ffff:a9fe:a9fe]/', PRIVATE],
    ['https://[::127.0.0.1]/', PRIVATE],
    ['https://[::ffff:0:7f00:1]/', PRIVATE],
    ['https://[64:ff9b::a00:1]/', PRIVATE],
    ['https://[64:ff9b::808:808]/', PRIVATE],
    ['https://[2002:7f00:1::]/', PRIVATE],
    ['https://[2001::1]/', PRIVATE],
    ['https://[2001:db8::1]/', PRIVATE],
    ['https://localhost/', PRIVATE],
    ['https://LOCALHOST:8443/', PRIVATE],
    ['https://localhost./', PRIVATE],
    ['https://foo.localhost/', PRIVATE],
    ['https://foo.localhost./', PRIVATE],
    ['http://1.1.1.1/', HTTPS],
    ['ftp://1.1.1.1/', HTTPS],
    ['https://user:pw@1.1.1.1/', CREDS],
    ['https://user@1.1.1.1/', CREDS],
    ['https://1.1.1.1/?x=1', QUERY],
    ['https://1.1.1.1/?', QUERY],
    ['https://1.1.1.1/#frag', QUERY],
    ['not a url', INVALID],
    ['', INVALID],
    ['https://private.example/', RESOLVES],
    ['https://mixed.example/', RESOLVES],
    ['https://mapped.example/', RESOLVES],
  ];

  it.each(refused)('%s (%s)', async (raw, reason) => {
    expect(await checkPublicHttpsUrl(raw, noAllow, resolver)).toEqual({ ok: false, reason });
  });
});

describe('checkPublicHttpsUrl accepts', () => {
  it.each([
    'https://1.1.1.1/',
    'https://[2606:4700:4700::1111]/',
    'https://8.8.8.8:8443/api',
    'https://public.example/',
    'https://public6.example/sms/v1',
    'https://PUBLIC.example./',
  ])('%s', async (raw) => {
    const result = await checkPublicHttpsUrl(raw, noAllow, async (h) => resolver(h.replace(/\.$/, '')));
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.url).toBeInstanceOf(URL);
  });

  it('passes a name that does not resolve (the connect-time check guards it)', async () => {
    const result = await checkPublicHttpsUrl('https://unknown.example/', noAllow, resolver);
    expect(result.ok).toBe(true);
  });

  it('returns the canonical URL', async () => {
    const result = await checkPublicHttpsUrl('https://8.8.8.8:443/api', noAllow, resolver);
    expect(result.ok && result.url.href).toBe('https://8.8.8.8/api');
  });
});

describe('allowHosts', () => {
  it('exempts exactly the listed host:port', async () => {
    const allowed = await checkPublicHttpsUrl('https://127.0.0.1:9443/', { allowHosts: ['127.0.0.1:9443'] });
    expect(allowed.ok).toBe(true);
    const otherPort = await checkPublicHttpsUrl('https://127.0.0.1:9443/', { allowHosts: ['127.0.0.1:9444'] });
    expect(otherPort).toEqual({ ok: false, reason: 'host is a private or reserved address' });
  });

  it('defaults the port to 443', async () => {
    expect((await checkPublicHttpsUrl('https://10.0.0.1/', { allowHosts: ['10.0.0.1:443'] })).ok).toBe(true);
    expect((await checkPublicHttpsUrl('https://10.0.0.1:443/', { allowHosts: ['10.0.0.1:443'] })).ok).toBe(true);
    expect((await checkPublicHttpsUrl('https://10.0.0.1/', { allowHosts: ['10.0.0.1'] })).ok).toBe(false);
  });

  it('matches IPv6 literals with brackets', async () => {
    expect((await checkPublicHttpsUrl('https://[::1]:8443/', { allowHosts: ['[::1]:8443'] })).ok).toBe(true);
    expect((await checkPublicHttpsUrl('https://[::1]:8443/', { allowHosts: ['::1:8443'] })).ok).toBe(false);
  });

  it('exempts a listed name without resolving it', async () => {
    const neverCalled: Resolver = async () => {
      throw new Error('must not resolve');
    };
    const result = await checkPublicHttpsUrl('https://localhost:9443/x', { allowHosts: ['localhost:9443'] }, neverCalled);
    expect(result.ok).toBe(true);
  });

  it('still refuses what no allow-list entry can excuse', async () => {
    const policy = { allowHosts: ['127.0.0.1:443'] };
    expect(await checkPublicHttpsUrl('http://127.0.0.1/', policy)).toEqual({ ok: false, reason: 'must use https' });
    expect(await checkPublicHttpsUrl('https://a:b@127.0.0.1/', policy)).toEqual({
      ok: false,
      reason: 'must not contain credentials',
    });
  });
});

describe('isPublicAddress', () => {
  it.each([
    ['1.1.1.1', true],
    ['93.184.216.34', true],
    ['2606:4700:4700::1111', true],
    ['::ffff:1.1.1.1', true],
    ['::ffff:101:101', true],
    ['127.0.0.1', false],
    ['10.0.0.1', false],
    ['100.64.0.1', false],
    ['169.254.169.254', false],
    ['198.18.0.1', false],
    ['240.0.0.1', false],
    ['::1', false],
    ['::', false],
    ['::ffff:127.0.0.1', false],
    ['::1.2.3.4', false],
    ['64:ff9b::101:101', false],
    ['2002:101:101::', false],
    ['2001::1', false],
    ['fe80::1%eth0', false],
    ['fd00::1', false],
    ['ff0e::1', false],
    ['127.1', false],
    ['2130706433', false],
    ['example.com', false],
    ['', false],
  ] as const)('%s → %s', (ip, expected) => {
    expect(isPublicAddress(ip)).toBe(expected);
  });
});
