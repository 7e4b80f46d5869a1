import { helperConfig } from '../../../test/helpers/helper-config.js';
import type { HelperConfig } from '../../helper/index.js';
import { generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ACTIONS } from '../../helper/actions.js';
import { parseSha256File, verifyFeed } from './feed.js';
import { compareVersions } from './version-order.js';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const pub = publicKey.export({ type: 'spki', format: 'pem' }).toString();
const feed = {
  name: 'mailsvc', version: '1.2.0', channel: 'stable', download_url: 'https://f/1.2.0/mailsvc-1.2.0.tar.gz', sha256_url: 'https://f/1.2.0/mailsvc-1.2.0.tar.gz.sha256',
  sha256: 'a'.repeat(64), migrations: ['0001_auth'], published_at: '2026-11-23T00:00:00Z',
};
const signed = (o: object, key = privateKey) => {
  const json = Buffer.from(JSON.stringify(o));
  return { json, sig: sign(null, json, key).toString('base64') };
};

describe('version.json signature', () => {
  it('accepts the release key and reads the fields', () => {
    const { json, sig } = signed(feed);
    expect(verifyFeed(json, sig, pub)).toMatchObject({ version: '1.2.0', sha256: 'a'.repeat(64) });
  });
  it('refuses another key, a changed byte, a truncated or empty signature', () => {
    const { json, sig } = signed(feed);
    const other = signed(feed, generateKeyPairSync('ed25519').privateKey).sig;
    const changed = Buffer.from(json.toString().replace('1.2.0', '9.2.0'));
    for (const [j, s] of [[json, other], [changed, sig], [json, sig.slice(0, 20)], [json, '']] as const) {
      expect(() => verifyFeed(j, s, pub)).toThrow(/does not verify/);
    }
  });
  it('refuses a signed feed with a bad version or sha256', () => {
    for (const bad of [{ ...feed, version: 'latest' }, { ...feed, sha256: 'xyz' }, { ...feed, name: 'other' }, { ...feed, channel: 'beta' }]) {
      const { json, sig } = signed(bad);
      expect(() => verifyFeed(json, sig, pub)).toThrow(/not usable/);
    }
  });
  it('reads a .sha256 file as sha256sum writes it', () => {
    expect(parseSha256File(`${'B'.repeat(64)}  mailsvc-1.2.0.tar.gz\n`)).toBe('b'.repeat(64));
    expect(() => parseSha256File('nope')).toThrow();
  });
});

describe('version order', () => {
  it('orders by semantic versioning, a pre-release before its release', () => {
    const sorted = ['1.0.0', '1.0.0-nightly.2', '0.9.9', '1.0.0-nightly.10', '1.0.0-alpha', '1.10.0', '1.2.0'].sort(compareVersions);
    expect(sorted).toEqual(['0.9.9', '1.0.0-alpha', '1.0.0-nightly.2', '1.0.0-nightly.10', '1.0.0', '1.2.0', '1.10.0']);
    expect(compareVersions('1.0.0+build.5', '1.0.0')).toBe(0);
    expect(() => compareVersions('1.0', '1.0.0')).toThrow();
  });
});

describe('helper verbs of the updater', () => {
  it('restart acts on mailsvc.service only; the job units take a fixed kind and a job id and nothing else', () => {
    const cfg = helperConfig({ fail2banSocket: '/s' });
    const command = (name: string, args: string[], c: HelperConfig) => {
      const spec = ACTIONS.get(name);
      if (!spec || !('command' in spec)) throw new Error(`${name} is not a program action`);
      return spec.command(args, c);
    };
    expect(ACTIONS.get('mailsvc-restart')?.params).toEqual([]);
    expect(command('mailsvc-restart', [], cfg)).toMatchObject({ file: 'systemctl', args: ['restart', 'mailsvc.service'] });
    const [kind, param] = ACTIONS.get('mailsvc-job-start')?.params ?? [];
    expect(kind?.validate('update', cfg)).toBe('update');
    expect(kind?.validate('backup', cfg)).toBe('backup');
    for (const bad of ['auto-update', 'helper', '../x', 'update@x', '']) expect(() => kind?.validate(bad, cfg)).toThrow();
    expect(param?.validate('0123abcd', cfg)).toBe('0123abcd');
    for (const bad of ['../x', 'a;b', 'ssh.service', '-x', 'A'.repeat(5), '']) expect(() => param?.validate(bad, cfg)).toThrow();
    expect(command('mailsvc-job-start', ['update', '0123abcd'], { ...cfg, serviceManager: '/usr/local/lib/pm' })).toMatchObject({ file: '/usr/local/lib/pm', args: ['start', 'mailsvc-update@0123abcd.service'] });
    expect(command('mailsvc-job-start', ['backup', '0123abcd'], cfg)).toMatchObject({ file: 'systemctl', args: ['--no-block', 'start', 'mailsvc-backup@0123abcd.service'] });
  });
});
