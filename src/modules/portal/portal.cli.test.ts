import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { buildCli, runCli } from '../../../test/helpers/cli.js';
import { signInRequest } from '../../../test/helpers/portal.js';

// `mailsvc portal list|enable|disable`, the built command against the
// database a running service uses: the service refuses the mailbox at once.
describe('mailsvc portal: the administrator\'s switch on the host', { timeout: 120_000 }, () => {
  let db: TestDatabase;
  let t: TestApp;
  let env: Record<string, string>;

  beforeAll(async () => {
    buildCli();
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_ENABLE_USER_PORTAL: 'yes' });
    await t.ctx.domains.create('example.org');
    await t.ctx.accounts.create({ address: 'alice@example.org', password: 'alice-mailbox-pw' });
    env = { MAILSVC_DATA_DIR: t.dataDir, MAILSVC_DATABASE_URL: db.url, MAILSVC_SECRET_KEY: t.settings.secretKey ?? '' };
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('disable --mailbox refuses the mailbox in the portal; list --json shows it; enable lets it in again', async () => {
    const off = await runCli(['portal', 'disable', '--mailbox', 'Alice@Example.org', '--json'], { env });
    expect(off.code, off.stderr).toBe(0);
    expect(JSON.parse(off.stdout)).toEqual({ name: 'alice@example.org', self_service: false, changed: true });
    expect((await signInRequest(t.app, { address: 'alice@example.org', password: 'alice-mailbox-pw' })).statusCode).toBe(403);
    const list = await runCli(['portal', 'list', '--json'], { env });
    expect(JSON.parse(list.stdout)).toEqual({ disabled_domains: [], disabled_mailboxes: ['alice@example.org'] });
    const on = await runCli(['portal', 'enable', '--mailbox', 'alice@example.org'], { env });
    expect(on.stdout).toContain('Self-service on for alice@example.org.');
    expect((await signInRequest(t.app, { address: 'alice@example.org', password: 'alice-mailbox-pw' })).statusCode).toBe(200);
  });

  it('bad input: one error line, a non-zero exit, what to do next; nothing changes', async () => {
    const both = await runCli(['portal', 'disable', '--domain', 'example.org', '--mailbox', 'alice@example.org'], { env });
    expect(both.code).not.toBe(0);
    expect(both.stderr).toMatch(/give exactly one of --domain <name> or --mailbox <address>/);
    const unknown = await runCli(['portal', 'disable', '--domain', 'nowhere.example'], { env });
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/nowhere\.example/);
    const list = await runCli(['portal', 'list', '--json'], { env });
    expect(JSON.parse(list.stdout)).toEqual({ disabled_domains: [], disabled_mailboxes: [] });
  });
});
