import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page, Route } from 'playwright-core';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { launchChromium, newContext, panelBrowserUnavailable, startPanelStack } from './helpers/panel-stack.js';
import type { PanelStack } from './helpers/panel-stack.js';
import { queuePostfixUnavailable, startQueuePostfix } from './helpers/postfix-queue.js';
import type { QueuePostfix } from './helpers/postfix-queue.js';
import { oathtoolCode } from './helpers/totp.js';
import { ADMIN_PASSWORD } from './helpers/app.js';
import { REPO_ROOT } from './helpers/cli.js';
import { makeMailStorage } from './helpers/backups.js';
import { startKnot } from './helpers/knot.js';
import type { Knot } from './helpers/knot.js';
import { freePort } from './helpers/mail-daemons.js';
import { startFakeSmsProvider } from './helpers/fake-sms-provider.js';
import type { FakeSmsProvider } from './helpers/fake-sms-provider.js';
import { startFakeCloudflare } from './helpers/cloudflare-server.js';
import type { FakeCloudflare } from './helpers/cloudflare-server.js';

const execFileP = promisify(execFile);
const SHOTS = join(REPO_ROOT, 'test-results/panel');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const PAGES = ['dashboard', 'security', 'domains', 'accounts', 'aliases', 'app-passwords', 'queue', 'bans', 'firewall', 'backups', 'dns', 'certs', 'stats', 'general', 'limits', 'audit'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const unavailable = panelBrowserUnavailable();

type AxeResult = { violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[] };

/** axe-core run in the page: serious or critical violations, as readable lines. */
async function axe(page: Page): Promise<string[]> {
  // Evaluated over the DevTools protocol: the page's CSP (no inline script) stays as it is.
  await page.evaluate(AXE);
  const result = (await page.evaluate('axe.run()')) as AxeResult;
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

describe.skipIf(unavailable !== null)('the web panel in Chromium, against the real service', () => {
  let db: TestDatabase;
  let stack: PanelStack;
  let chromium: { browser: Browser; close(): Promise<void> };
  let context: BrowserContext;
  let page: Page;
  let postfix: QueuePostfix | undefined;
  let knot: Knot;
  let sms: FakeSmsProvider;
  let cf: FakeCloudflare;
  const ZONE = { id: 'a1b2c3d4e5f6', name: 'example.org', token: 'cf-zone-token-never-shown-31f7' };
  let work: string;
  let secret = '';
  /** The TOTP step last used: each sign-in needs a later one. */
  let lastStep = 0;
  const nextCode = async (): Promise<string> => {
    let now = Date.now();
    while (Math.floor(now / 30_000) <= lastStep) {
      await new Promise((r) => setTimeout(r, 1000));
      now = Date.now();
    }
    lastStep = Math.floor(now / 30_000);
    return oathtoolCode(secret, now);
  };
  const go = async (id: string) => {
    await page.goto(`${stack.origin}/panel/#/${id}`);
    await page.locator('h1').first().waitFor();
  };
  /** An API answer through the browser's own panel session (MFA is on: Basic no longer works). */
  const viaPanel = async (path: string): Promise<{ status: number; body: string }> =>
    (await page.evaluate(`fetch('/panel/api${path}').then(async (r) => ({ status: r.status, body: await r.text() }))`)) as { status: number; body: string };
  /**
   * The API's message shows at this input: aria-invalid, and aria-describedby
   * names the message, which sits right with the input (same field or cell).
   */
  const expectAtField = async (input: Locator, text: RegExp) => {
    await expect.poll(() => input.getAttribute('aria-invalid')).toBe('true');
    const id = await input.getAttribute('aria-describedby');
    expect(id).toMatch(/-err$/);
    const message = page.locator(`[id="${id}"]`);
    expect(await message.textContent()).toMatch(text);
    // The message's own box (the field, or the table cell) holds the input.
    expect(await message.locator('xpath=..').locator(`[aria-describedby="${id}"]`).count()).toBe(1);
  };
  /** What has the focus: its tag, text, name, whether it is in the dialog, and its outline (focus visible). */
  const focused = async () =>
    (await page.evaluate(`(() => {
      const el = document.activeElement;
      const style = el ? getComputedStyle(el) : null;
      return { tag: el ? el.tagName : '', text: el ? (el.textContent || '').trim() : '', name: el ? el.getAttribute('name') || '' : '', inDialog: !!(el && el.closest('[role=dialog]')), outline: style ? style.outlineStyle + ' ' + style.outlineWidth : '' };
    })()`)) as { tag: string; text: string; name: string; inDialog: boolean; outline: string };
  /** Tab (or Shift+Tab) until the focus is where `want` says; fails after `max` presses. */
  const tabTo = async (want: (f: Awaited<ReturnType<typeof focused>>) => boolean, shift = false, max = 60) => {
    for (let i = 0; i < max; i++) {
      await page.keyboard.press(shift ? 'Shift+Tab' : 'Tab');
      const f = await focused();
      if (want(f)) return f;
    }
    throw new Error(`focus never got there by ${shift ? 'Shift+Tab' : 'Tab'}; last: ${JSON.stringify(await focused())}`);
  };
  const visibleFocus = (f: { outline: string }) => expect(f.outline, 'focus outline').toMatch(/^solid [1-9]/);
  const staleSession = () =>
    expect.poll(async () => JSON.parse((await page.evaluate("fetch('/panel/session').then((r) => r.text())")) as string).fresh_until < new Date().toISOString(), { timeout: 40_000, interval: 1000 }).toBe(true);
  const signIn = async (p: Page, password = ADMIN_PASSWORD) => {
    await p.getByLabel('Password', { exact: true }).fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
  };

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    // A short window, so that the destructive action at the end asks for the second factor again.
    work = mkdtempSync(join(tmpdir(), 'mailsvc-panel-work-'));
    // The mail storage the backups copy, and the Postfix log (the captured one, moved to yesterday) the statistics read.
    makeMailStorage(join(work, 'vmail'), 2, 6);
    // Rspamd's configuration, copied: the DKIM keys and the signing file go there (rspamadm checks the copy), never to /etc/rspamd.
    if (existsSync('/etc/rspamd')) cpSync('/etc/rspamd', join(work, 'rspamd'), { recursive: true });
    const yesterday = new Date(Date.now() - 86_400_000);
    const syslogDay = `${MONTHS[yesterday.getMonth()]} ${String(yesterday.getDate()).padStart(2, ' ')}`;
    writeFileSync(join(work, 'mail.log'), readFileSync(join(REPO_ROOT, 'test/fixtures/stats/postfix-real.log'), 'utf8').replace(/^Nov 23/gm, syslogDay));
    // The domain's zone in a real authoritative server: MX, the mail host and SPF; no DMARC and no DKIM record.
    knot = await startKnot({ 'example.org': ['@ MX 10 mail', 'mail A 127.0.0.1', '@ TXT "v=spf1 mx -all"'] });
    sms = await startFakeSmsProvider();
    // Cloudflare's API played by a local HTTPS server (the test certificate for 127.0.0.1).
    const tls = join(REPO_ROOT, 'test/fixtures/tls');
    cf = await startFakeCloudflare({ cert: readFileSync(join(tls, 'server-cert.pem'), 'utf8'), key: readFileSync(join(tls, 'server-key.pem'), 'utf8') }, ZONE);
    const closed = String(await freePort());
    const env: Record<string, string> = {
      MAILSVC_PANEL_REAUTH_WINDOW: '30',
      MAILSVC_MAIL_STORAGE: join(work, 'vmail'),
      MAILSVC_BACKUP_LOCAL_DIR: join(work, 'backups'),
      MAILSVC_BACKUP_CONFIG_PATHS: join(work, 'no-config'),
      MAILSVC_MAIL_LOG: join(work, 'mail.log'),
      MAILSVC_DNS_RESOLVER: knot.address,
      MAILSVC_DNS_AUTHORITATIVE: knot.address,
      MAILSVC_DELIVERABILITY_HTTPS_PORT: closed,
      MAILSVC_DELIVERABILITY_SMTP_PORT: closed,
      MAILSVC_RSPAMD_LOCAL_DIR: join(work, 'rspamd/local.d'),
      MAILSVC_OUTBOUND_ALLOW_HOSTS: `${sms.hostPort},127.0.0.1:${cf.port}`,
      MAILSVC_CLOUDFLARE_API_URL: cf.baseUrl,
    };
    if (queuePostfixUnavailable() === null) {
      postfix = await startQueuePostfix();
      await postfix.send([{ from: 'alice@sender.example', to: ['bob@far.example'] }, { from: 'carol@sender.example', to: ['dan@far.example'] }]);
      await postfix.settle(2);
      env.MAILSVC_POSTFIX_CONFIG_DIR = postfix.configDir;
    }
    stack = await startPanelStack(db.url, env);
    chromium = await launchChromium();
    context = await newContext(chromium.browser);
    page = await context.newPage();
    page.on('dialog', (d) => void d.accept());
  }, 120_000);
  afterEach(async (ctx) => {
    // What the page showed when a step failed.
    if (ctx.task.result?.state === 'fail' && page) {
      await page.screenshot({ path: join(SHOTS, `failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`), fullPage: true }).catch(() => undefined);
      console.log(`page at failure (${page.url()}):\n${await page.locator('body').innerText().catch(() => '?')}`);
    }
  });
  afterAll(async () => {
    await chromium?.close();
    await stack?.close();
    await postfix?.stop();
    await knot?.stop();
    await sms?.close();
    await cf?.close();
    await db?.drop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('signs in with the password, enrols TOTP from the QR secret, and then needs the code', async () => {
    await page.goto(`${stack.origin}/panel/`);
    await signIn(page);
    // No factor yet: MFA is required, so the panel's work starts at Security.
    await go('security');
    await page.getByRole('button', { name: 'Set up TOTP' }).click();
    const qr = page.getByRole('img', { name: /QR code/ });
    await qr.waitFor();
    expect(await qr.getAttribute('src')).toMatch(/^data:image\/svg\+xml;base64,/);
    expect(await qr.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(0);
    secret = (await page.getByTestId('shown-once').textContent())!.trim();
    expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
    await page.screenshot({ path: join(SHOTS, 'security-totp-enrol.png'), fullPage: true });
    await page.getByLabel('Code from the app').fill(await nextCode());
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.getByText('Recovery codes', { exact: true }).waitFor();
    expect(await page.getByTestId('shown-once').textContent()).toMatch(/^([a-z0-9]{5}-[a-z0-9]{5} ?){10}$/i);
    await page.getByRole('button', { name: 'I have saved them' }).click();
    // The password-only session ended with the enrolment: sign in again, now with a code.
    await page.getByRole('heading', { name: 'Sign in to mailsvc' }).waitFor();
    await signIn(page);
    await page.getByRole('textbox', { name: 'Code', exact: true }).fill('000000');
    await page.getByRole('button', { name: 'Verify' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toBe('Invalid code');
    await page.screenshot({ path: join(SHOTS, 'signin-wrong-code.png'), fullPage: true });
    await page.getByRole('textbox', { name: 'Code', exact: true }).fill(await nextCode());
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await go('dashboard');
    await page.getByTestId('health-status').waitFor();
  }, 120_000);

  it('keeps the session in a __Host- cookie: Secure, HttpOnly, SameSite=Strict, host-only', async () => {
    const cookies = await context.cookies(stack.origin);
    expect(cookies).toHaveLength(1);
    const c = cookies[0]!;
    expect(c).toMatchObject({ name: '__Host-mailsvc_panel', path: '/', httpOnly: true, secure: true, sameSite: 'Strict', expires: -1, domain: '127.0.0.1' });
    // No script of the page can read it.
    expect(await page.evaluate('document.cookie')).toBe('');
  });

  it('creates a domain, an account and an app password (shown once)', async () => {
    await go('domains');
    await page.getByLabel('Domain name').fill('not a domain');
    await page.getByRole('button', { name: 'Add domain' }).click();
    // The API's message shows next to the field it is about.
    await expect.poll(() => page.locator('.field', { has: page.getByLabel('Domain name') }).locator('.error').textContent()).toBeTruthy();
    // Without DKIM keys: the DNS test below makes them.
    await page.getByRole('switch', { name: /Make its DKIM keys/ }).uncheck();
    await page.getByLabel('Domain name').fill('example.org');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByRole('cell', { name: 'example.org', exact: true }).waitFor();

    await go('accounts');
    await page.getByLabel('Address', { exact: true }).fill('alice@example.org');
    await page.getByLabel('Password', { exact: true }).fill('a long enough mailbox password 1');
    await page.getByRole('button', { name: 'Add account' }).click();
    await page.getByRole('cell', { name: 'alice@example.org', exact: true }).waitFor();

    await page.getByRole('link', { name: 'App passwords of alice@example.org', exact: true }).click();
    await page.getByLabel('Name of the new app password').fill('phone');
    await page.getByRole('button', { name: 'Create app password' }).click();
    const shown = (await page.getByTestId('shown-once').textContent())!;
    expect(shown).toMatch(/^\S+\.\S+$/);
    await page.getByRole('cell', { name: 'phone', exact: true }).waitFor();
    // Once: a reload lists it without the password.
    await page.reload();
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByRole('cell', { name: 'phone', exact: true }).waitFor();
    expect(await page.content()).not.toContain(shown.split('.')[1]!);
  }, 60_000);

  it('shows each API error at the field it names, tied to it (aria-invalid, aria-describedby): app passwords, an account, a firewall cell', async () => {
    // App passwords: the account is in the API path; a wrong one is said at the account field, not above the table.
    await go('app-passwords');
    const account = page.getByLabel('Account address');
    await account.fill('nobody@example.org');
    await account.press('Enter');
    await expectAtField(account, /Account nobody@example\.org not found/);
    expect(await page.locator('p.error').count()).toBe(0);
    expect(await page.getByLabel('Name of the new app password').count()).toBe(0);
    await account.fill('alice@example.org');
    await account.press('Enter');
    await page.getByRole('cell', { name: 'phone', exact: true }).waitFor();
    expect(await account.getAttribute('aria-invalid')).toBeNull();
    // A refused name shows at the name, and the account stays valid.
    const name = page.getByLabel('Name of the new app password');
    await name.fill('   ');
    await name.press('Enter');
    await expectAtField(name, /name must be 1 to 64 characters/);
    expect(await account.getAttribute('aria-invalid')).toBeNull();
    await page.screenshot({ path: join(SHOTS, 'app-passwords-field-error.png'), fullPage: true });

    // Accounts: a bad quota is a 422 naming body.quota_bytes, shown at the quota, not at the address (the form's main field).
    await go('accounts');
    await page.getByLabel('Address', { exact: true }).fill('bob@example.org');
    await page.getByLabel('Password', { exact: true }).fill('a long enough mailbox password 2');
    const quota = page.getByLabel('Quota (MiB, empty for none)');
    await quota.fill('lots');
    await page.getByRole('button', { name: 'Add account' }).click();
    await expectAtField(quota, /integer/);
    expect(await page.getByLabel('Address', { exact: true }).getAttribute('aria-invalid')).toBeNull();
    expect((await viaPanel('/accounts/bob@example.org')).status).toBe(404);

    // Firewall: a bad source in a new row, at that row's cell; nothing applied.
    await go('firewall');
    const rows = await page.locator('tbody tr').count();
    await page.getByRole('button', { name: 'Add row' }).click();
    await page.getByLabel(`Port, row ${rows + 1}`).fill('ssh');
    const source = page.getByLabel(`Source, row ${rows + 1}`);
    await source.fill('not-an-address');
    await page.getByRole('button', { name: 'Save and apply' }).click();
    await expectAtField(source, /./);
    expect(await page.getByLabel(`Port, row ${rows + 1}`).getAttribute('aria-invalid')).toBeNull();
    if (rows > 0) expect(await page.getByLabel('Source, row 1').getAttribute('aria-invalid')).toBeNull();
    expect((await viaPanel('/admin/firewall')).body).not.toContain('not-an-address');
    // The refused row is not kept: the page opens afresh on the stored rules.
    await page.reload();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(rows);
  }, 60_000);

  it('edits a firewall row and applies it (in the helper namespace)', async () => {
    await go('firewall');
    await page.getByRole('button', { name: 'Add row' }).click();
    await page.getByLabel('Port, row 1').fill('ssh web');
    await page.getByLabel('Source, row 1').fill('not-an-address');
    await page.getByRole('button', { name: 'Save and apply' }).click();
    await expect.poll(() => page.locator('td .error').first().textContent()).toBeTruthy();
    await page.getByLabel('Source, row 1').fill('');
    await page.getByLabel('Port, row 1').fill('ssh web 8080');
    await page.getByLabel('Firewall enabled').selectOption('yes');
    await page.getByRole('button', { name: 'Save and apply' }).click();
    await expect.poll(async () => (await viaPanel('/admin/firewall')).body, { timeout: 15_000 }).toContain('ssh web 8080');
    // The page redraws its table once it has read the stored ruleset back: open it afresh so the next edit is not redrawn away.
    await page.reload();
    await expect.poll(() => page.getByLabel('Port, row 1').inputValue()).toBe('ssh web 8080');
    await page.getByLabel('Port, row 1').fill('ssh web 8443');
    await page.getByRole('button', { name: 'Save and apply' }).click();
    await expect.poll(async () => (await viaPanel('/admin/firewall')).body, { timeout: 15_000 }).toContain('ssh web 8443');
    // Applied for real: the helper's nft holds the rule in the namespace's mailsvc table.
    const { stdout } = await execFileP('ip', ['netns', 'exec', stack.ns, 'nft', 'list', 'table', 'inet', 'mailsvc']);
    expect(stdout).toMatch(/8443/);
  }, 60_000);

  it('changes a limit, and shows a bad value next to its field', async () => {
    await go('limits');
    await page.getByLabel('greylist-delay').fill('0');
    await page.getByRole('button', { name: /Save/ }).click();
    await expect.poll(() => page.locator('#limit-greylist-delay-err').textContent()).toBeTruthy();
    // A duration is a number with its unit: the default 300 s shows as 5 min, so 10 is 600 s.
    expect(await page.getByRole('row', { name: /greylist-delay/ }).getByRole('combobox', { name: 'Unit' }).inputValue()).toBe('min');
    await page.getByLabel('greylist-delay').fill('10');
    await page.getByRole('button', { name: /Save/ }).click();
    await page.getByText('saved').waitFor();
    expect((JSON.parse((await viaPanel('/admin/limits')).body) as Record<string, number>)['greylist-delay']).toBe(600);
  }, 60_000);

  it('switches the update channel (Settings → General); a checkout has no release key, and the check says so', async () => {
    await go('general');
    // The radio shows the stored channel: it turns once the PATCH is stored and read back.
    await page.getByLabel('nightly').click();
    await expect.poll(async () => (JSON.parse((await viaPanel('/admin/settings')).body) as { update_channel: string; update_channel_source: string }).update_channel).toBe('nightly');
    await page.getByText('Chosen here.').waitFor();
    await expect.poll(() => page.getByLabel('nightly').isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Check for an update' }).click();
    await page.getByText(/only an installed release/).waitFor();
    await page.getByLabel('stable').click();
    await expect.poll(async () => (JSON.parse((await viaPanel('/admin/settings')).body) as { update_channel: string }).update_channel).toBe('stable');
  }, 60_000);

  it('takes an SMS provider secret write-only: stored, never shown again', async () => {
    const secretValue = 'provider-secret-value-7f3a9c';
    await go('security');
    const form = page.getByRole('form', { name: 'Provider provider_a' });
    await form.getByLabel('Client secret').fill(secretValue);
    await form.getByRole('button', { name: 'Save provider_a' }).click();
    await expect.poll(() => form.getByText('stored; type a new one to replace it').first().isVisible()).toBe(true);
    await page.reload();
    await page.getByRole('form', { name: 'Provider provider_a' }).waitFor();
    expect(await page.content()).not.toContain(secretValue);
    const values = await page.evaluate("[...document.querySelectorAll('input')].map((i) => i.value).join(' ')");
    expect(values).not.toContain(secretValue);
    expect((await viaPanel('/auth/mfa/providers')).body).not.toContain(secretValue);
  }, 60_000);

  it.skipIf(queuePostfixUnavailable() !== null)('filters the real Postfix queue on the server and deletes in bulk after a count', async () => {
    await go('queue');
    await expect.poll(() => page.locator('tbody tr').count()).toBe(2);
    await page.getByLabel('Sender').fill('alice@sender.example');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    await page.getByRole('button', { name: /Count matching/ }).click();
    await page.getByText('1 message matches.').waitFor();
    await page.getByRole('button', { name: 'Delete 1 message' }).click();
    await expect.poll(async () => (await postfix!.queue()).map((m) => m.sender)).toEqual(['carol@sender.example']);
  }, 60_000);

  it('signs in with an SMS code: password, "Send SMS", the code the provider received, a session', async () => {
    await go('security');
    const form = page.getByRole('form', { name: 'Provider provider_a' });
    await form.getByLabel('Base URL').fill(sms.origin);
    await form.getByLabel('Client ID').fill('panel-client');
    await form.getByLabel('API key').fill('panel-api-key-4711');
    await form.getByLabel('Enabled').check();
    await form.getByRole('button', { name: 'Save provider_a' }).click();
    await expect.poll(async () => (JSON.parse((await viaPanel('/auth/mfa/providers')).body) as { code: string; enabled: boolean; base_url: string }[]).find((p) => p.code === 'provider_a')).toMatchObject({ enabled: true, base_url: sms.origin });
    const smsForm = page.getByRole('form', { name: 'SMS second factor' });
    // A bad number: the API's message shows at the phone field.
    await smsForm.getByLabel(/Phone/).fill('12');
    await smsForm.getByLabel('Use SMS codes at sign-in').check();
    await smsForm.getByRole('button', { name: 'Save SMS settings' }).click();
    await expect.poll(() => smsForm.locator('.field', { has: page.getByRole('textbox', { name: /Phone/ }) }).locator('.error').textContent()).toBe('Invalid phone number');
    await smsForm.getByLabel(/Phone/).fill('+49 30 1234 5678');
    await smsForm.getByRole('button', { name: 'Save SMS settings' }).click();
    await expect.poll(async () => (JSON.parse((await viaPanel('/auth/mfa')).body) as { sms_enabled: boolean }).sms_enabled).toBe(true);

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to mailsvc' }).waitFor();
    await signIn(page);
    await page.getByLabel('SMS code').check();
    const before = sms.requests.length;
    await page.getByRole('button', { name: 'Send SMS' }).click();
    await page.getByText(/Sent to the phone ending in/).waitFor();
    expect(sms.requests.length).toBe(before + 1);
    const sent = sms.requests.at(-1)!.body as { message?: string };
    const code = /\d{6}/.exec(sent.message ?? '')?.[0];
    expect(code).toMatch(/^\d{6}$/);
    // The code is never in the page before it is typed.
    expect(await page.content()).not.toContain(code!);
    await page.getByRole('textbox', { name: 'Code', exact: true }).fill(code!);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect((await viaPanel('/auth/mfa')).status).toBe(200);
  }, 90_000);

  it('runs a full backup and verifies it, with the jobs\' progress; a bad setting shows at its key', async () => {
    await go('backups');
    await page.getByText('No backup yet.').waitFor();
    await page.getByRole('radio', { name: 'Full', exact: true }).check();
    await page.getByRole('button', { name: 'Run backup now' }).click();
    const run = page.getByTestId('job-backup');
    await run.waitFor();
    await expect.poll(() => run.getAttribute('data-state'), { timeout: 60_000 }).toBe('succeeded');
    expect(await run.locator('progress').getAttribute('value')).toBe('1');
    const listed = (JSON.parse((await viaPanel('/admin/backups')).body) as { items: { id: string; type: string; files: number }[] }).items;
    expect(listed).toHaveLength(1);
    // 2 mailboxes of 6 messages, and their dovecot-uidlist files.
    expect(listed[0]).toMatchObject({ type: 'full', files: 14 });
    await page.getByRole('cell', { name: listed[0]!.id }).waitFor();
    await expect.poll(() => page.getByTestId('last-backup').textContent()).toBe(listed[0]!.id);

    // By keyboard: the button takes the focus and Enter.
    await page.getByRole('button', { name: 'Verify the newest chain' }).focus();
    await page.keyboard.press('Enter');
    const verify = page.getByTestId('job-backup-verify');
    await expect.poll(() => verify.getAttribute('data-state'), { timeout: 60_000 }).toBe('succeeded');
    await expect.poll(() => page.getByTestId('verify-result').textContent()).toContain(listed[0]!.id);
    await expect.poll(() => page.getByTestId('last-verify').textContent()).toMatch(/^OK/);
    await expect.poll(() => page.getByRole('cell', { name: /^verified/ }).count()).toBe(1);
    await page.screenshot({ path: join(SHOTS, 'backups-after-run.png'), fullPage: true });

    // A calendar systemd refuses: the message shows at its key.
    await page.getByRole('radio', { name: 'custom' }).check();
    await page.locator('#backup-ONCALENDAR').fill('every full moon');
    await page.getByRole('button', { name: /Save 1 change/ }).click();
    await expect.poll(() => page.locator('#backup-ONCALENDAR-err').textContent()).toContain('not a systemd calendar expression');
    await page.locator('#backup-ONCALENDAR').fill('*-*-* 02:30:00');
    await page.getByRole('group', { name: 'Compression' }).getByRole('radio', { name: 'zstd' }).check();
    await page.getByRole('button', { name: /Save 1 change/ }).click();
    await page.getByText(/Saved COMPRESSION; to take effect: nothing: stored, every process reads it at once/).waitFor();
    // Stored in the database (one place, read by every process at once); the API says where it comes from, and the form shows it.
    const settings = JSON.parse((await viaPanel('/admin/backups/settings')).body) as { settings: Record<string, unknown>; sources: Record<string, string> };
    expect(settings.settings.COMPRESSION).toBe('zstd');
    expect(settings.sources.COMPRESSION).toBe('stored');
    expect(await page.getByRole('group', { name: 'Compression' }).getByRole('radio', { name: 'zstd' }).isChecked()).toBe(true);
  }, 120_000);

  it('DNS: the plan, DKIM keys made and rotated, a real deliverability check against knot with progress and each check\'s result, and a Cloudflare sync with a dry run first', async () => {
    await go('dns');
    await expect.poll(() => page.getByLabel('Domain', { exact: true }).inputValue()).toBe('example.org');
    await page.getByRole('cell', { name: 'MX', exact: true }).first().waitFor();
    expect(await page.getByRole('cell', { name: /_domainkey/ }).count()).toBe(0);
    await page.getByRole('button', { name: 'Generate DKIM keys' }).click();
    await page.getByText(/^Signing: /).waitFor();
    await page.getByRole('cell', { name: /_domainkey\.example\.org/ }).first().waitFor();
    await page.getByRole('button', { name: 'Rotate DKIM keys' }).click();
    await page.getByText(/^Rotation: step /).waitFor();

    await page.getByText('No report yet.').waitFor();
    await page.getByRole('button', { name: 'Check deliverability now' }).click();
    const job = page.getByTestId('job-deliverability');
    await job.waitFor();
    await expect.poll(() => job.getAttribute('data-state'), { timeout: 60_000 }).toBe('succeeded');
    // What the page shows is the saved report the API gives.
    const report = JSON.parse((await viaPanel('/domains/example.org/deliverability')).body) as { counts: { pass: number; warn: number; fail: number; unknown: number }; checks: { id: string; status: 'pass' | 'warn' | 'fail' | 'unknown'; fix: string | null }[] };
    const byId = Object.fromEntries(report.checks.map((c) => [c.id, c]));
    expect(byId.mx?.status).toBe('pass');
    expect(byId.dmarc?.status).toBe('fail');
    expect(byId.dkim?.status).toBe('fail');
    await expect.poll(() => page.getByTestId('deliverability-summary').textContent()).toContain(`${report.counts.pass} passed, ${report.counts.warn} recommended, ${report.counts.fail} failed, ${report.counts.unknown} could not be determined`);
    const text = { pass: 'pass', warn: 'recommended', fail: 'fail', unknown: 'could not determine' };
    for (const c of report.checks) {
      const row = page.locator(`tr[data-check="${c.id}"]`);
      expect(await row.locator('td').first().textContent(), c.id).toBe(text[c.status]);
      if (c.status !== 'pass') expect(await row.locator('td').nth(2).textContent(), c.id).toBe(c.fix ?? '—');
    }
    // The DMARC fix names the record to publish.
    expect(await page.locator('tr[data-check="dmarc"] td').nth(2).textContent()).toMatch(/_dmarc/);

    // The Cloudflare token is write-only: its input starts empty; a refused save shows the API's message at the field it names.
    expect(await page.getByLabel('API token').inputValue()).toBe('');
    await page.getByLabel('Zone ID').fill('not a zone!');
    await page.getByLabel('API token').fill('cf-token-never-shown-9d2e');
    await page.getByRole('button', { name: 'Save Cloudflare settings' }).click();
    await expect.poll(() => page.locator('.field', { has: page.getByLabel('Zone ID') }).locator('.error').textContent()).toBeTruthy();
    expect((await viaPanel('/domains/example.org/dns-sync')).status).toBe(404);
    // Stored (the token checked against the zone first), then a dry run's diff, and only then the run.
    await page.getByLabel('Zone ID').fill(ZONE.id);
    await page.getByLabel('API token').fill(ZONE.token);
    await page.getByRole('button', { name: 'Save Cloudflare settings' }).click();
    await page.getByText(/^Set up; token stored \(never shown\)/).waitFor();
    expect(await page.getByLabel('API token').inputValue()).toBe('');
    expect(await page.getByRole('button', { name: 'Apply these changes' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Preview the changes (dry run)' }).click();
    await page.getByText('Dry run: nothing changed yet.').waitFor();
    const creates = await page.getByRole('cell', { name: 'create', exact: true }).count();
    expect(creates).toBeGreaterThan(0);
    expect(cf.records.filter((r) => r.name.includes('_domainkey'))).toHaveLength(0);
    await page.getByRole('button', { name: 'Apply these changes' }).click();
    await page.getByText(new RegExp(`^${creates} record\\(s\\) changed, read back and verified`)).waitFor();
    expect(cf.records.filter((r) => r.name.includes('_domainkey'))).toHaveLength(creates);
    expect(await page.content()).not.toContain(ZONE.token);
    expect((await viaPanel('/domains/example.org/dns-sync')).body).not.toContain(ZONE.token);
  }, 120_000);

  it('DNS: the domain picker finds any domain on the server, beyond the first page; a bad search shows at its field', async () => {
    const domains = (await stack.t.ctx.modules.get('domains')).service;
    for (let i = 0; i < 60; i++) await domains.create(`zz-bulk-${String(i).padStart(2, '0')}.example`);
    const total = (JSON.parse((await viaPanel('/domains?limit=1')).body) as { total: number }).total;
    expect(total).toBeGreaterThan(60);
    await go('dns');
    // The page was open already (the test before): loaded afresh, it asks for the domains again.
    await page.reload();
    const picker = page.getByLabel('Domain', { exact: true });
    await expect.poll(() => picker.inputValue()).toBe('example.org');
    await expect.poll(() => picker.locator('option').count()).toBeGreaterThan(1);
    // The first page only: the last domain is not in it, and the picker says there is more.
    expect(await picker.locator('option').count()).toBe(50);
    expect(await picker.locator('option', { hasText: 'zz-bulk-59.example' }).count()).toBe(0);
    await page.getByText(`50 of ${total} matches: find to narrow`).waitFor();
    // Found on the server by part of its name.
    const find = page.getByLabel('Find a domain');
    await find.fill('bulk-59');
    await find.press('Enter');
    await expect.poll(() => picker.locator('option', { hasText: 'zz-bulk-59.example' }).count()).toBe(1);
    // The chosen domain stays in the list while another search shows.
    expect(await picker.locator('option').allTextContents()).toEqual(['example.org', 'zz-bulk-59.example']);
    await picker.selectOption('zz-bulk-59.example');
    await page.getByRole('cell', { name: 'zz-bulk-59.example', exact: true }).first().waitFor();
    expect(await page.getByLabel('Mail host (MX target)').inputValue()).toBe('mail.zz-bulk-59.example');
    // A search the API refuses: its message at the search field.
    await find.fill('no spaces');
    await find.press('Enter');
    await expectAtField(find, /letters, digits, dots and hyphens/);
    await page.screenshot({ path: join(SHOTS, 'dns-picker-search.png'), fullPage: true });
  }, 60_000);

  it('statistics: the log collected into the database, shown as totals, the chart and per mailbox', async () => {
    const stats = await stack.t.ctx.modules.get('stats');
    expect(await stats.service.collect()).toMatchObject({ rows_added: 3 });
    await go('stats');
    await expect.poll(() => page.getByTestId('total-all').textContent()).toBe('3');
    expect(await page.getByTestId('total-inbound').textContent()).toBe('1');
    expect(await page.getByTestId('total-outbound').textContent()).toBe('1');
    expect(await page.getByTestId('total-local').textContent()).toBe('1');
    expect(await page.getByTestId('total-bytes').textContent()).toBe('3.7 KiB');
    const chart = page.getByTestId('traffic-chart');
    expect(await chart.getAttribute('data-total')).toBe('3');
    expect(await chart.locator('rect').count()).toBeGreaterThan(0);
    await page.getByRole('cell', { name: 'alice@example.org', exact: true }).waitFor();
    await page.getByRole('cell', { name: 'bob@example.org', exact: true }).waitFor();
    // Filtered on the server.
    await page.getByRole('textbox', { name: 'Mailbox' }).fill('bob@example.org');
    // Enter in the filter field submits it (keyboard).
    await page.getByRole('textbox', { name: 'Mailbox' }).press('Enter');
    await expect.poll(() => page.getByRole('cell', { name: 'alice@example.org', exact: true }).count()).toBe(0);
    await page.getByRole('cell', { name: 'bob@example.org', exact: true }).waitFor();
    // A bad range: the API's message next to the field.
    await page.getByLabel('From (UTC day or time)').fill('yesterday');
    await page.getByRole('button', { name: 'Show' }).click();
    await expect.poll(() => page.locator('.field', { has: page.getByLabel('From (UTC day or time)') }).locator('.error').textContent()).toContain('ISO 8601');
  }, 60_000);

  it('the dashboard shows the last backup and verify, each domain\'s deliverability and the week\'s traffic', async () => {
    await go('dashboard');
    await expect.poll(() => page.getByTestId('dash-backup').textContent()).toMatch(/^full, /);
    await expect.poll(() => page.getByTestId('dash-verify').textContent()).toMatch(/^OK, /);
    const report = JSON.parse((await viaPanel('/domains/example.org/deliverability')).body) as { counts: { fail: number } };
    await expect.poll(() => page.getByTestId('dash-deliverability').textContent()).toContain(`example.org: ${report.counts.fail} failed`);
    await expect.poll(() => page.getByTestId('traffic-chart').getAttribute('data-total')).toBe('3');
    // The host check: the summary line first, then each failing check with its status in words and its fix.
    const doctor = JSON.parse((await viaPanel('/admin/doctor')).body) as { summary: string; checks: { name: string; status: string; fix: string | null }[] };
    await expect.poll(() => page.getByTestId('doctor-summary').textContent(), { timeout: 30_000 }).toContain(doctor.summary);
    const failing = doctor.checks.find((c) => c.status === 'fail');
    if (failing) {
      await expect.poll(() => page.getByTestId('doctor-checks').textContent()).toContain(`Failing: ${failing.name}`);
      expect(await page.getByTestId('doctor-checks').textContent()).toContain(`Fix: ${failing.fix ?? ''}`);
    }
  }, 90_000);

  it('every page passes an axe-core scan (no serious or critical violations), at 1280 and 360 px', async () => {
    const problems: string[] = [];
    for (const width of [1280, 360]) {
      await page.setViewportSize({ width, height: 900 });
      for (const id of PAGES) {
        await go(id);
        await page.waitForLoadState('networkidle');
        problems.push(...(await axe(page)).map((p) => `${id} @${width}: ${p}`));
        await page.screenshot({ path: join(SHOTS, `${id}${width === 360 ? '-360' : ''}.png`), fullPage: true });
        // Nothing is wider than the screen at 360 px.
        if (width === 360) expect(await page.evaluate('document.documentElement.scrollWidth'), id).toBeLessThanOrEqual(360);
      }
    }
    expect(problems).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 120_000);

  it('lands the focus on each page\'s heading once it has loaded, when reached from the menu (never on BODY)', async () => {
    await go('dashboard');
    // A busy host: each API answer comes a moment after the page's "Loading…" stand-in took the focus.
    const slow = async (route: Route) => {
      await new Promise((r) => setTimeout(r, 300));
      await route.continue();
    };
    await page.route('**/panel/api/**', slow);
    const lost: string[] = [];
    for (const id of PAGES) {
      // The menu's way there: a hash change, not a new document. The "Loading…" page's heading had the focus and is replaced.
      await page.evaluate(`location.hash = '#/${id}'`);
      await page.waitForLoadState('networkidle');
      const where = async () =>
        (await page.evaluate(`(() => { const loading = [...document.querySelectorAll('main [role=status]')].some((e) => /Loading/.test(e.textContent || '')); const el = document.activeElement; return loading ? 'loading' : el ? el.tagName : 'none'; })()`)) as string;
      await expect.poll(where, { timeout: 10_000 }).not.toBe('loading');
      // Focus moves in an effect after the render that removed "Loading…": wait for it to settle,
      // and count a page whose heading never gets it (BODY after 10 s) as lost.
      let tag = await where();
      const settle = Date.now() + 10_000;
      while (tag !== 'H1' && Date.now() < settle) {
        await new Promise((r) => setTimeout(r, 100));
        tag = await where();
      }
      if (tag !== 'H1') lost.push(`${id}: ${tag}`);
    }
    await page.unroute('**/panel/api/**', slow);
    expect(lost).toEqual([]);
  }, 120_000);

  it('refuses a cross-site form post', async () => {
    const other = await context.newPage();
    await other.goto(stack.otherSite);
    // A plain HTML form of another site, text/plain so that its body looks like JSON.
    await other.evaluate(`(() => {
      const form = document.createElement('form');
      form.method = 'POST';
      form.action = ${JSON.stringify('__TARGET__')};
      form.enctype = 'text/plain';
      const input = document.createElement('input');
      input.name = '{"name":"evil.example","x":"';
      input.value = '"}';
      form.appendChild(input);
      document.body.appendChild(form);
      form.submit();
    })()`.replace('__TARGET__', `${stack.origin}/panel/api/domains`));
    await other.waitForURL(/\/panel\/api\/domains$/);
    await other.waitForLoadState('load');
    expect(await other.content()).toMatch(/Not signed in|CSRF|Cross-site/);
    expect((await viaPanel('/domains/evil.example')).status).toBe(404);
    expect((await viaPanel('/domains/example.org')).status).toBe(200);
    await other.close();
  });

  it('works by keyboard alone: Domains from the menu, a domain added, the re-auth dialog of its delete cancelled, then completed; focus visible, kept in the dialog and given back', async () => {
    await go('dashboard');
    // The focus starts at the page heading; the menu is before it.
    await expect.poll(focused).toMatchObject({ tag: 'H1', text: 'Dashboard' });
    const link = await tabTo((f) => f.tag === 'A' && f.text === 'Domains', true);
    visibleFocus(link);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Domains', level: 1 }).waitFor();
    await expect.poll(async () => (await focused()).text).toBe('Domains');
    const input = await tabTo((f) => f.name === 'name');
    visibleFocus(input);
    await page.keyboard.type('kbd.example');
    await page.keyboard.press('Enter');
    await page.getByRole('cell', { name: 'kbd.example', exact: true }).waitFor();
    expect((await viaPanel('/domains/kbd.example')).status).toBe(200);

    // Deleting asks for a fresh second factor once the sign-in is older than the window.
    await staleSession();
    const del = await tabTo((f) => f.tag === 'BUTTON' && f.text === 'Delete kbd.example');
    visibleFocus(del);
    const dialog = page.getByRole('dialog', { name: 'Confirm with your second factor' });
    const openDialog = async () => {
      await page.keyboard.press('Enter');
      await dialog.waitFor();
      // The focus is in the dialog, at the password.
      await expect.poll(focused).toMatchObject({ inDialog: true, name: 'password' });
    };
    await openDialog();
    // Tab and Shift+Tab go round inside the dialog, never to the page behind it.
    for (let i = 0; i < 8; i++) {
      await page.keyboard.press('Tab');
      const f = await focused();
      expect(f.inDialog, `Tab ${i + 1}: ${JSON.stringify(f)}`).toBe(true);
      visibleFocus(f);
    }
    for (let i = 0; i < 8; i++) {
      await page.keyboard.press('Shift+Tab');
      expect((await focused()).inDialog, `Shift+Tab ${i + 1}`).toBe(true);
    }
    await page.screenshot({ path: join(SHOTS, 'reauth-dialog-keyboard.png'), fullPage: true });
    // Cancel with Space: the dialog closes, the focus is back on the Delete button, the domain is still there.
    await tabTo((f) => f.inDialog && f.text === 'Cancel');
    await page.keyboard.press('Space');
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(focused).toMatchObject({ tag: 'BUTTON', text: 'Delete kbd.example' });
    expect((await viaPanel('/domains/kbd.example')).status).toBe(200);
    // Escape cancels too.
    await openDialog();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(focused).toMatchObject({ tag: 'BUTTON', text: 'Delete kbd.example' });
    expect((await viaPanel('/domains/kbd.example')).status).toBe(200);
    // Completed: the password, Enter, the focus moves to the code, the code, Enter; the delete goes through.
    await openDialog();
    await page.keyboard.type(ADMIN_PASSWORD);
    await page.keyboard.press('Enter');
    await expect.poll(focused).toMatchObject({ inDialog: true, name: 'code' });
    await page.keyboard.type(await nextCode());
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(async () => (await viaPanel('/domains/kbd.example')).status, { timeout: 30_000 }).toBe(404);
    await expect.poll(() => page.getByRole('cell', { name: 'kbd.example', exact: true }).count()).toBe(0);
  }, 150_000);

  it('asks for the password and a fresh code before deleting a domain, then deletes it', async () => {
    const started = Date.now();
    await go('domains');
    await page.getByRole('switch', { name: /Make its DKIM keys/ }).uncheck();
    await page.getByLabel('Domain name').fill('spare.example');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByRole('cell', { name: 'spare.example', exact: true }).waitFor();
    // The sign-in is older than MAILSVC_PANEL_REAUTH_WINDOW (30 s) by now.
    await expect.poll(async () => JSON.parse((await page.evaluate("fetch('/panel/session').then((r) => r.text())")) as string).fresh_until < new Date().toISOString(), { timeout: 40_000, interval: 1000 }).toBe(true);
    await page.getByRole('button', { name: 'Delete spare.example' }).click();
    const dialog = page.getByRole('dialog', { name: 'Confirm with your second factor' });
    await dialog.waitFor();
    await page.screenshot({ path: join(SHOTS, 'reauth-dialog.png'), fullPage: true });
    expect((await viaPanel('/domains/spare.example')).status).toBe(200);
    await dialog.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
    await dialog.getByRole('button', { name: 'Continue' }).click();
    await dialog.getByRole('textbox', { name: 'Code', exact: true }).fill(await nextCode());
    await dialog.getByRole('button', { name: 'Verify' }).click();
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(async () => (await viaPanel('/domains/spare.example')).status).toBe(404);
    expect(Date.now() - started).toBeLessThan(90_000);
  }, 120_000);

  it('signs out: the session ends server-side', async () => {
    await go('dashboard');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to mailsvc' }).waitFor();
    expect(await context.cookies(stack.origin)).toEqual([]);
    const after = await page.evaluate("fetch('/panel/api/domains').then((r) => r.status)");
    expect(after).toBe(401);
  });

  it('shows the lockout after too many wrong passwords, as the API counts them', async () => {
    for (let i = 0; i < 5; i++) {
      await signIn(page, 'wrong password');
      await expect.poll(() => page.getByRole('alert').first().textContent()).toMatch(/Invalid credentials|Too many/);
    }
    await signIn(page);
    await expect.poll(() => page.getByRole('alert').first().textContent()).toMatch(/Too many authentication attempts: try again in \d+ minute/);
    await page.screenshot({ path: join(SHOTS, 'signin-lockout.png'), fullPage: true });
  }, 60_000);
});
