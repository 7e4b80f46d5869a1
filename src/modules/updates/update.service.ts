import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { getPinned } from '../../adapters/outbound/pinned-get.js';
import { OutboundRefused } from '../../adapters/outbound/pinned-request.js';
import { OutboundHttpError } from '../../adapters/outbound/pinned-get.js';
import type { OutboundPolicy } from '../../adapters/outbound/address-policy.js';
import type { UpdateChannel, UpdateSettings } from '../../config/update-settings.js';
import type { Db } from '../../db/database.js';
import { AppError } from '../../shared/errors.js';
import { feedFiles, verifyFeed } from './feed.js';
import type { VersionFeed } from './feed.js';
import type { UpdateCheck } from './schema.js';
import { compareVersions, parseVersion } from './version-order.js';

export type UpdateServiceDeps = {
  settings: UpdateSettings;
  outbound: OutboundPolicy;
  db: Db;
  /** The channel in force: the stored one, else MAILSVC_UPDATE_CHANNEL. */
  channel(): Promise<UpdateChannel>;
  currentVersion: string;
  /** The release public key this installation ships (`<release>/keys/release-signing.pub`). */
  publicKeyFile: string;
  /** Extra CA for the feed's server (tests); production uses the system's and NODE_EXTRA_CA_CERTS. */
  ca?: string | undefined;
};

const FEED_MAX_BYTES = 64 * 1024;
const TIMEOUT_MS = 30_000;

/** Turns the guard's and the server's failures into errors that say what to do. */
export function fetchError(url: string, err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof OutboundRefused) {
    return new AppError('bad_request', `the update feed ${url} is refused: ${err.message} (an in-house feed must be listed in MAILSVC_OUTBOUND_ALLOW_HOSTS)`);
  }
  if (err instanceof OutboundHttpError) return new AppError('upstream', `the update feed ${err.message}`);
  const e = err as { code?: string; message?: string };
  return new AppError('unavailable', `cannot fetch ${url}: ${e.code ?? e.message ?? String(err)}; check MAILSVC_UPDATE_CHECK_URL_* and the network`);
}

/** Checks a channel's signed feed against the running release. */
export class UpdateService {
  constructor(readonly deps: UpdateServiceDeps) {}

  publicKey(): string {
    try {
      return readFileSync(this.deps.publicKeyFile, 'utf8');
    } catch {
      throw new AppError(
        'unavailable',
        `no release public key at ${this.deps.publicKeyFile}: only an installed release (mailsvc install) updates through channels; a checkout updates with git`,
      );
    }
  }

  async get(url: string, maxBytes = FEED_MAX_BYTES): Promise<Buffer> {
    try {
      return await getPinned(url, { policy: this.deps.outbound, timeoutMs: TIMEOUT_MS, maxBytes, ca: this.deps.ca });
    } catch (err) {
      throw fetchError(url, err);
    }
  }

  /** The channel's version.json, its signature verified before anything in it is used. */
  async feed(channel: UpdateChannel): Promise<{ feed: VersionFeed; url: string }> {
    const key = this.publicKey();
    const files = feedFiles(this.deps.settings.feedUrls[channel]);
    const [json, sig] = await Promise.all([this.get(files.json), this.get(files.sig, 1024)]);
    const feed = verifyFeed(json, sig.toString('utf8'), key);
    if (feed.channel !== channel) throw new AppError('upstream', `the ${channel} feed announces a ${feed.channel} release: refusing it (the channels' trees must stay separate)`);
    return { feed, url: files.json };
  }

  /** Migrations applied to this database (the downgrade rule needs them). */
  async appliedMigrations(): Promise<string[]> {
    const r = await sql<{ name: string }>`select name from kysely_migration`.execute(this.deps.db);
    return r.rows.map((x) => x.name);
  }

  /** A downgrade is possible only to a release that knows every migration this database has. */
  async downgradeAllowed(feed: VersionFeed): Promise<boolean> {
    const known = new Set(feed.migrations);
    return (await this.appliedMigrations()).every((m) => known.has(m));
  }

  async check(): Promise<UpdateCheck & { feed: VersionFeed }> {
    const channel = await this.deps.channel();
    const { feed, url } = await this.feed(channel);
    const current = this.deps.currentVersion;
    const order = parseVersion(current) ? compareVersions(feed.version, current) : 1;
    return {
      channel,
      current_version: current,
      available_version: feed.version,
      update_available: order > 0,
      downgrade: order < 0,
      downgrade_allowed: order < 0 ? await this.downgradeAllowed(feed) : false,
      feed_url: url,
      download_url: feed.download_url,
      published_at: feed.published_at,
      feed,
    };
  }
}

export const publicKeyPath = (packageRoot: string): string => join(packageRoot, 'keys', 'release-signing.pub');
