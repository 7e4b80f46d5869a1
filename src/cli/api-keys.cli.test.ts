import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, expectOk, expectOneErrorLine, json, runCli } from '../../test/helpers/cli.js';
import { startTestApp } from '../../test/helpers/app.js';
import { call } from '../../test/helpers/flows.js';

/** `mailsvc api-keys create|list|revoke`, run as the built binary against the database a service uses. */
let dirs: string[] = [];
beforeAll(() => {
  buildCli();
}, 120_000);
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

describe('mailsvc api-keys', () => {
  it('creates a key the API accepts (shown once), lists it without the secret, revokes it; bad input exits 2', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-keys-cli-'));
    dirs.push(dir);
    const url = `sqlite://${join(dir, 'mailsvc.db')}`;
    // The same secret key the test service derives for this database.
    const env = { MAILSVC_DATA_DIR: dir, MAILSVC_DATABASE_URL: url, MAILSVC_SECRET_KEY: createHash('sha256').update(url).digest('base64') };
    const cli = (args: string[]) => runCli(args, { env });
    const expires = new Date(Date.now() + 7 * 86_400_000).toISOString();
    expectOk(await cli(['db', 'migrate']));

    const created = await cli(['api-keys', 'create', '--name', 'monitoring', '--scopes', 'read, accounts', '--expires', expires, '--json']);
    expectOk(created);
    const body = json(created) as { id: string; key: string; scopes: string[]; created_by: string };
    expect(body).toMatchObject({ name: 'monitoring', scopes: ['read', 'accounts'], created_by: 'cli', active: true });
    const secret = body.key.split('.')[1] as string;

    const t = await startTestApp(url);
    try {
      expect((await call(t, 'GET', '/domains', `Bearer ${body.key}`)).status).toBe(200);
      const list = await cli(['api-keys', 'list', '--json']);
      expectOk(list);
      expect(json(list)).toEqual([expect.objectContaining({ id: body.id, name: 'monitoring', active: true })]);
      expect(list.stdout).not.toContain(secret);
      const human = await cli(['api-keys', 'list']);
      expect(human.stdout).toContain(body.id);
      expect(human.stdout).not.toContain(secret);

      expectOk(await cli(['api-keys', 'revoke', body.id]));
      expect((await call(t, 'GET', '/domains', `Bearer ${body.key}`)).status).toBe(401);
      const again = await cli(['api-keys', 'revoke', body.id]);
      expect(again.code).toBe(4);
      expect(expectOneErrorLine(again)).toMatch(/No API key/);
    } finally {
      await t.close();
    }

    for (const args of [
      ['--scopes', 'root', '--expires', expires],
      ['--scopes', 'read', '--expires', new Date(Date.now() - 1000).toISOString()],
      ['--scopes', 'read', '--expires', new Date(Date.now() + 400 * 86_400_000).toISOString()],
      ['--scopes', 'read', '--expires', '400d'],
    ]) {
      const r = await cli(['api-keys', 'create', '--name', 'x', ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(expectOneErrorLine(r)).toMatch(/scope|expires_at/);
    }
    expect(json(await cli(['api-keys', 'list', '--json']))).toEqual([]);
  });

  it('--expires takes a span from now (30d), as audit list --since takes one back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-keys-span-'));
    dirs.push(dir);
    const env = { MAILSVC_DATA_DIR: dir };
    const cli = (args: string[]) => runCli(args, { env });
    expectOk(await cli(['db', 'migrate']));
    const before = Date.now();
    const r = await cli(['api-keys', 'create', '--name', 'span', '--scopes', 'read', '--expires', '30d', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const at = Date.parse((json(r) as { expires_at: string }).expires_at);
    expect(at).toBeGreaterThanOrEqual(before + 30 * 86_400_000 - 1000);
    expect(at).toBeLessThanOrEqual(Date.now() + 30 * 86_400_000 + 1000);
  });
});
