import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Settings } from '../config/settings.js';
import { runModule } from './cli-runner.js';

/** What an early start did, in order, with the data directory it was given. */
function recorder() {
  const events: string[] = [];
  const early = (settings: Settings) => {
    events.push(`early ${settings.dataDir}`);
    return { dataDir: settings.dataDir, close: () => events.push('closed') };
  };
  return { events, early };
}

describe("a command's early start (runModule's `early`)", () => {
  let dataDir = '';
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-early-'));
    vi.stubEnv('MAILSVC_DATA_DIR', dataDir);
  });
  afterEach(() => {
    vi.unstubAllEnvs();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs with the settings before the module is built, reaches the command, and is closed when the command ends', async () => {
    const { events, early } = recorder();
    const run = runModule(async (ctx) => (events.push('module built'), ctx.infra.settings), { database: false });
    const result = await run(async (settings, started) => (events.push(`command got ${started?.dataDir}`), settings.dataDir), early);
    expect(result).toBe(dataDir);
    expect(events).toEqual([`early ${dataDir}`, 'module built', `command got ${dataDir}`, 'closed']);
  });

  it('is closed when the command fails, or its module cannot be built, without using it', async () => {
    const failing = recorder();
    const run = runModule(async (ctx) => ctx.infra.settings, { database: false });
    await expect(run(() => Promise.reject(new Error('bad filter')), failing.early)).rejects.toThrow('bad filter');
    expect(failing.events).toEqual([`early ${dataDir}`, 'closed']);
    const unbuilt = recorder();
    const broken = runModule(() => Promise.reject(new Error('no module')), { database: false });
    await expect(broken(async () => 'never', unbuilt.early)).rejects.toThrow('no module');
    expect(unbuilt.events).toEqual([`early ${dataDir}`, 'closed']);
  });

  it('is not started when the settings are wrong: the settings error, as without it', async () => {
    vi.stubEnv('MAILSVC_DATABASE_URL', 'ftp://nowhere');
    const { events, early } = recorder();
    const run = runModule(async (ctx) => ctx.infra.settings, { database: false });
    await expect(run(async () => 'never', early)).rejects.toThrow('MAILSVC_DATABASE_URL');
    expect(events).toEqual([]);
  });

  it('a command without one gets undefined', async () => {
    const run = runModule(async (ctx) => ctx.infra.settings, { database: false });
    expect(await run(async (_settings, started) => started)).toBeUndefined();
  });
});
