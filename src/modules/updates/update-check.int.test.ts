/**
 * The check against a real HTTPS feed (the test CA) through the outbound
 * guard, on a real migrated database: newer, downgrade allowed or not by the
 * migrations, the guard's refusal, a feed of the wrong channel.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFeedServer } from '../../../test/helpers/releases.js';
import type { FeedServer } from '../../../test/helpers/releases.js';
import { createDb } from '../../db/database.js';
import type { Db } from '../../db/database.js';
import { migrateToLatest } from '../../app/schema.js';
import { AppError } from '../../shared/errors.js';
import { applyUpdate } from './update-apply.js';
import { UpdateService } from './update.service.js';

describe('update check against a real feed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-check-'));
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const keyFile = join(dir, 'release-signing.pub');
  writeFileSync(keyFile, publicKey.export({ type: 'spki', format: 'pem' }));
  let feed: FeedServer;
  let db: Db;
  let applied: string[];
  let origin: string;

  const publish = (channel: string, o: Record<string, unknown>): void => {
    mkdirSync(join(dir, 'www', channel), { recursive: true });
    const json = Buffer.from(JSON.stringify({ name: 'mailsvc', channel, sha256: 'c'.repeat(64), published_at: 'now', download_url: `${origin}/${channel}/x.tar.gz`, sha256_url: `${origin}/${channel}/x.tar.gz.sha256`, ...o }));
    writeFileSync(join(dir, 'www', channel, 'version.json'), json);
    writeFileSync(join(dir, 'www', channel, 'version.json.sig'), sign(null, json, privateKey).toString('base64'));
  };
  const service = (allow = true, channel: 'stable' | 'nightly' = 'stable') =>
    new UpdateService({
      settings: { channel, feedUrls: { stable: `${origin}/stable`, nightly: `${origin}/nightly` }, autoUpdates: false, installRoot: join(dir, 'opt'), healthTimeout: 5, maxArchiveBytes: 1 << 20, caFile: undefined },
      outbound: { allowHosts: allow ? [origin.slice('https://'.length)] : [] },
      db,
      channel: () => Promise.resolve(channel),
      currentVersion: '2.0.0',
      publicKeyFile: keyFile,
    });

  beforeAll(async () => {
    feed = await startFeedServer(join(dir, 'www'));
    origin = feed.origin.replace('localhost', '127.0.0.1');
    db = createDb(`sqlite://${join(dir, 'db.sqlite')}`);
    await migrateToLatest(db);
    applied = (await db.selectFrom('kysely_migration' as never).select('name' as never).execute()).map((r) => (r as { name: string }).name);
  });
  afterAll(async () => {
    await db?.destroy();
    await feed?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a newer release is offered', async () => {
    publish('stable', { version: '2.1.0', migrations: applied });
    expect(await service().check()).toMatchObject({ current_version: '2.0.0', available_version: '2.1.0', update_available: true, downgrade: false });
  });

  it('an older release that knows every applied migration may be installed when asked; one that does not, never', async () => {
    publish('stable', { version: '1.9.0', migrations: applied });
    expect(await service().check()).toMatchObject({ downgrade: true, downgrade_allowed: true, update_available: false });
    publish('stable', { version: '1.8.0', migrations: applied.slice(0, -1) });
    expect(await service().check()).toMatchObject({ downgrade: true, downgrade_allowed: false });
    // The job refuses it even with allow_downgrade, before it downloads anything.
    const ctx = { progress: () => Promise.resolve(), signal: new AbortController().signal };
    const deps = { updates: service(), snapshotter: { take: () => Promise.reject(new Error('no')), restore: () => Promise.reject(new Error('no')) }, helper: { run: () => Promise.reject(new Error('no')) }, env: {}, probe: { baseUrl: 'http://127.0.0.1:1', open: () => Promise.reject(new Error('no')), close: () => Promise.resolve() } };
    const err = await applyUpdate(deps, { allow_downgrade: true }, ctx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('conflict');
    expect((err as AppError).detail).toMatch(/migrations 1\.8\.0 does not know/);
    expect(feed.requests.filter((p) => p.endsWith('.tar.gz'))).toEqual([]);
  });

  it('a feed on a private address is refused by the outbound guard unless allowed', async () => {
    publish('stable', { version: '2.1.0', migrations: applied });
    const err = await service(false).check().catch((e: unknown) => e);
    expect((err as AppError).code).toBe('bad_request');
    expect((err as AppError).detail).toMatch(/private or reserved address.*MAILSVC_OUTBOUND_ALLOW_HOSTS/);
  });

  it('a signed feed of the other channel is refused: the trees stay separate', async () => {
    mkdirSync(join(dir, 'www', 'nightly'), { recursive: true });
    publish('stable', { version: '2.1.0', migrations: applied });
    // The nightly URL serves a stable file (a mirror mix-up): signed, but not for this channel.
    const { readFileSync } = await import('node:fs');
    writeFileSync(join(dir, 'www', 'nightly', 'version.json'), readFileSync(join(dir, 'www', 'stable', 'version.json')));
    writeFileSync(join(dir, 'www', 'nightly', 'version.json.sig'), readFileSync(join(dir, 'www', 'stable', 'version.json.sig')));
    const err = await service(true, 'nightly').check().catch((e: unknown) => e);
    expect((err as AppError).detail).toMatch(/nightly feed announces a stable release/);
  });
});
