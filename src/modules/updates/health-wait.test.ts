import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { waitForHealth } from './health-wait.js';
import type { HealthProbe } from './health-wait.js';

/**
 * The updater's health wait against a local HTTP server answering
 * /health/details: a daemon down on the host (a component in degraded_by)
 * does not fail an update; the service's own parts (database, schema, Redis)
 * and a wrong version do.
 */
describe('waitForHealth', () => {
  let body: unknown = {};
  let server: Server;
  let probe: HealthProbe;
  beforeAll(async () => {
    server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    probe = { baseUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}`, open: () => Promise.resolve({ id: 'x', key: 'k' }), close: () => Promise.resolve() };
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });
  const wait = () => waitForHealth(probe, { key: 'k' }, '2.0.0', 1200, new AbortController().signal);

  it('passes on ok, and on degraded by components only', async () => {
    body = { status: 'ok', degraded_by: [], version: '2.0.0' };
    await expect(wait()).resolves.toBeUndefined();
    body = { status: 'degraded', degraded_by: ['component fail2ban', 'component postsrsd'], version: '2.0.0' };
    await expect(wait()).resolves.toBeUndefined();
  });

  it('fails on degraded by the service’s own parts, a failed backup verify, or another version', async () => {
    for (const reasons of [['redis'], ['database'], ['schema'], ['backup verify'], ['component postfix', 'redis']]) {
      body = { status: 'degraded', degraded_by: reasons, version: '2.0.0' };
      await expect(wait()).rejects.toThrow(/did not answer \/health\/details with status ok/);
    }
    body = { status: 'degraded', version: '2.0.0' };
    await expect(wait()).rejects.toThrow(/status degraded/);
    body = { status: 'ok', degraded_by: [], version: '1.9.0' };
    await expect(wait()).rejects.toThrow(/version 1\.9\.0/);
  }, 20_000);
});
