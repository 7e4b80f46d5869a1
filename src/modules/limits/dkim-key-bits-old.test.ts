import { createHash, createPublicKey } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';
import { expectOneErrorLine, runCli } from '../../../test/helpers/cli.js';

/**
 * dkim-key-bits' minimum is 2048. A 1024 from the environment or the settings
 * file stops the start with the setting named (exit 78); a 1024 an older
 * version stored is not used: 2048 is, new keys are 2048 bits, and the
 * journal, the CLI and `limits show` say so and what to do.
 */
describe('dkim-key-bits 1024 from an older setup', () => {
  let dir: string;
  let t: TestApp;
  let cliEnv: Record<string, string>;
  const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { env: { ...cliEnv, ...env }, timeoutMs: 60_000 });
  const rsaBits = async (domain: string): Promise<number[]> => {
    const rows = await t.ctx.db.selectFrom('dkim_keys').select(['bits', 'public_key', 'algorithm']).where('domain', '=', domain).execute();
    return rows.map((r) => {
      const der = Buffer.from(r.public_key, 'base64');
      const bits = createPublicKey({ key: der, format: 'der', type: 'spki' }).asymmetricKeyDetails?.modulusLength ?? -1;
      expect(r.bits).toBe(bits);
      return bits;
    });
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-keybits-'));
    const url = `sqlite://${join(dir, 'db.sqlite')}`;
    // The root helper's actions run in this process; Rspamd is "not installed" here, so keys are made and stored, no file written.
    const daemons = { MAILSVC_HELPER: 'direct', MAILSVC_RSPAMD_LOCAL_DIR: join(dir, 'no-rspamd/local.d'), MAILSVC_POSTSRSD_DEFAULTS: join(dir, 'no-postsrsd') };
    t = await startTestApp(url, { MAILSVC_MFA_REQUIRED: 'no', ...daemons });
    const data = join(dir, 'cli');
    mkdirSync(data);
    cliEnv = { ...daemons, MAILSVC_DATA_DIR: data, HOME: data, MAILSVC_DATABASE_URL: url, MAILSVC_SECRET_KEY: createHash('sha256').update(url).digest('base64') };
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('MAILSVC_DKIM_KEY_BITS=1024 in the environment: serve and the CLI refuse to start, exit 78, naming the setting and what it accepts', async () => {
    for (const args of [['serve'], ['dns', 'generate-dkim', 'example.test']]) {
      const r = await cli(args, { MAILSVC_DKIM_KEY_BITS: '1024' });
      expect(r.code, r.stderr).toBe(78);
      expect(expectOneErrorLine(r)).toMatch(/MAILSVC_DKIM_KEY_BITS: must be one of 2048, 3072, 4096/);
    }
  });

  it('the same in the settings file: exit 78 naming it', async () => {
    const file = join(dir, 'mailsvc.conf');
    writeFileSync(file, 'MAILSVC_DKIM_KEY_BITS=1024\n');
    const r = await cli(['limits', 'show'], { MAILSVC_CONFIG_FILE: file });
    expect(r.code, r.stderr).toBe(78);
    expect(expectOneErrorLine(r)).toMatch(/MAILSVC_DKIM_KEY_BITS: must be one of 2048, 3072, 4096/);
  });

  it('a stored 1024 (an older version) is not used: the service warns in its log, GET shows 2048, new keys are 2048 bits', async () => {
    await t.ctx.db.insertInto('limits').values({ key: 'dkim-key-bits', value: '1024', updated_at: Date.now() }).execute();
    // What a running service does when another process signals a change (and at its start).
    t.ctx.dropCaches();
    const warned = () => t.logs.map((l) => JSON.parse(l) as { level: number; msg: string; limit?: string }).filter((l) => l.limit === 'dkim-key-bits');
    await vi.waitFor(() => expect(warned()).toHaveLength(1), { timeout: 30_000 });
    const warning = warned()[0];
    expect(warning?.level).toBe(40);
    expect(warning?.msg).toMatch(/stored limit dkim-key-bits = 1024 is no longer accepted \(must be one of 2048, 3072, 4096\): 2048 is used instead; .*mailsvc limits set dkim-key-bits/);
    expect((await call(t, 'GET', '/admin/limits', t.basic())).body['dkim-key-bits']).toBe(2048);
    const r = await call(t, 'POST', '/domains', t.basic(), { name: 'example.test', generate_dkim: true });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(await rsaBits('example.test')).toEqual([2048]);
    // Told once per process, not at every read.
    t.ctx.dropCaches();
    // A fixed wait on purpose: a second warning must NOT appear. On a slow machine a late second
    // warning could be missed (the test passes), never a false failure: the margin does not decide it.
    await new Promise((r) => setTimeout(r, 300));
    expect(warned()).toHaveLength(1);
  });

  it('the CLI: limits show marks it IGNORED and says what to do; a command that makes keys warns on stderr and makes 2048-bit keys', async () => {
    const show = await cli(['limits', 'show']);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/dkim-key-bits\s+2048\s+2048\s+2048\s+bits\s+IGNORED/);
    expect(show.stdout).toMatch(/Note: the stored limit dkim-key-bits = 1024 is no longer accepted/);
    expect((await cli(['add', 'domain', 'other.test'])).code).toBe(0);
    const gen = await cli(['dns', 'generate-dkim', 'other.test', '--json']);
    expect(gen.code, gen.stderr).toBe(0);
    expect(gen.stderr).toMatch(/dkim-key-bits = 1024 is no longer accepted/);
    expect(JSON.parse(gen.stdout)).toMatchObject({ keys: [{ bits: 2048 }] });
    expect(await rsaBits('other.test')).toEqual([2048]);
  });

  it('setting it again: 1024 is refused (exit 2), 3072 is stored and the note is gone', async () => {
    const refused = await cli(['limits', 'set', 'dkim-key-bits', '1024']);
    expect(refused.code).toBe(2);
    // Its stderr: the warning about the stored 1024 (still stored), then the error.
    expect(refused.stderr).toMatch(/dkim-key-bits = 1024 is no longer accepted/);
    expect(refused.stderr.trimEnd().split('\n').at(-1)).toMatch(/^mailsvc: dkim-key-bits must be one of 2048, 3072, 4096/);
    expect((await cli(['limits', 'set', 'dkim-key-bits', '3072'])).code).toBe(0);
    const show = await cli(['limits', 'show']);
    expect(show.stdout).toMatch(/dkim-key-bits\s+3072\s+2048\s+3072\s+bits/);
    expect(show.stdout).not.toMatch(/IGNORED|Note:/);
    expect(show.stderr).toBe('');
  });
});
