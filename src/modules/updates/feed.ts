import { createPublicKey, verify } from 'node:crypto';
import { AppError } from '../../shared/errors.js';
import { parseVersion } from './version-order.js';

/**
 * `version.json` of a channel. The spec's fields (`download_url`,
 * `sha256_url`, `channel`) and, beyond it, what makes the file worth signing:
 * the version, the archive's sha256 itself (so a hash file fetched from the
 * same server is checked against a signed value, not trusted), and the
 * migrations the release carries (so a downgrade can be judged).
 */
export type VersionFeed = {
  name: string;
  version: string;
  channel: 'stable' | 'nightly';
  download_url: string;
  sha256_url: string;
  sha256: string;
  migrations: string[];
  published_at: string;
};

/** Where a channel's version.json and its detached signature live. */
export function feedFiles(feedUrl: string): { json: string; sig: string } {
  const json = /\.json$/.test(feedUrl) ? feedUrl : `${feedUrl.replace(/\/+$/, '')}/version.json`;
  return { json, sig: `${json}.sig` };
}

const bad = (why: string): AppError => new AppError('upstream', `the update feed is not usable: ${why}`);

/**
 * Verifies the Ed25519 signature (base64, over the exact bytes of
 * version.json) with the release public key, then reads the fields. Nothing
 * in the file is looked at before the signature holds.
 */
export function verifyFeed(json: Buffer, signatureText: string, publicKeyPem: string): VersionFeed {
  const sig = Buffer.from(signatureText.trim(), 'base64');
  let ok = false;
  try {
    ok = sig.length === 64 && verify(null, json, createPublicKey(publicKeyPem), sig);
  } catch {
    ok = false;
  }
  if (!ok) throw new AppError('upstream', 'the signature of version.json does not verify with the release key this installation ships: refusing the update');
  let raw: unknown;
  try {
    raw = JSON.parse(json.toString('utf8'));
  } catch {
    throw bad('version.json is not JSON');
  }
  const o = raw as Record<string, unknown>;
  const str = (k: string): string => {
    if (typeof o[k] !== 'string' || o[k] === '') throw bad(`field ${k} is missing`);
    return o[k];
  };
  const feed: VersionFeed = {
    name: str('name'),
    version: str('version'),
    channel: str('channel') as VersionFeed['channel'],
    download_url: str('download_url'),
    sha256_url: str('sha256_url'),
    sha256: str('sha256').toLowerCase(),
    migrations: Array.isArray(o.migrations) && o.migrations.every((m) => typeof m === 'string') ? (o.migrations as string[]) : [],
    published_at: typeof o.published_at === 'string' ? o.published_at : '',
  };
  if (feed.name !== 'mailsvc') throw bad(`it announces "${feed.name}", not mailsvc`);
  if (!parseVersion(feed.version)) throw bad(`version "${feed.version}" is not a semantic version`);
  if (feed.channel !== 'stable' && feed.channel !== 'nightly') throw bad(`channel "${String(feed.channel)}" is neither stable nor nightly`);
  if (!/^[0-9a-f]{64}$/.test(feed.sha256)) throw bad('sha256 is not 64 hex digits');
  return feed;
}

/** The first word of a `.sha256` file (`<hex>  <name>`, as sha256sum writes it). */
export function parseSha256File(text: string): string {
  const hex = text.trim().split(/\s+/)[0]?.toLowerCase() ?? '';
  if (!/^[0-9a-f]{64}$/.test(hex)) throw bad('the .sha256 file does not start with 64 hex digits');
  return hex;
}
