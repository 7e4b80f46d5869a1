import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startMapServer } from '../routing/map-server.js';
import type { MapServer } from '../routing/map-server.js';
import { mapsCheck } from './socket-checks.js';

const log = pino({ level: 'silent' });
const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function server(lookup: () => Promise<string | null>): Promise<MapServer> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-doctor-maps-'));
  const s = await startMapServer({ path: join(dir, 'maps'), socketGroup: null }, { lookup }, log);
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }), () => s.close());
  return s;
}

describe("doctor's check of Postfix's lookup tables (socket.maps)", () => {
  it('ok when the tables answer; the harmless lookup is of a domain that cannot exist', async () => {
    const asked: unknown[] = [];
    const s = await server(async (...a: unknown[]) => {
      asked.push(a);
      return null;
    });
    expect(await mapsCheck({ path: s.path ?? '' }, 5000)).toEqual({ status: 'ok', detail: `answers on unix:${s.path ?? ''}`, fix: null });
    expect(asked).toEqual([['domains', 'doctor.mailsvc.invalid']]);
  });

  it('fail when the lookups fail (the database): Postfix would defer all mail for the domains', async () => {
    const s = await server(() => Promise.reject(new Error('SQLITE_BUSY')));
    const f = await mapsCheck({ path: s.path ?? '' }, 5000);
    expect(f).toMatchObject({ status: 'fail', detail: expect.stringMatching(/lookups fail: Postfix defers mail/) });
    expect(JSON.stringify(f)).not.toContain('SQLITE_BUSY');
  });

  it('fail with the fix to start the service when nothing listens; ok "off" when switched off', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-doctor-maps-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    expect(await mapsCheck({ path: join(dir, 'maps') }, 5000)).toMatchObject({ status: 'fail', detail: `no socket at unix:${join(dir, 'maps')}`, fix: expect.stringMatching(/systemctl start mailsvc\.service/) });
    expect(await mapsCheck(null, 5000)).toMatchObject({ status: 'ok', detail: expect.stringMatching(/^off \(MAILSVC_MAPS_LISTEN=off\)/) });
  });
});
