import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { launchChromium, newContext, panelBrowserUnavailable, startPanelStack } from './helpers/panel-stack.js';
import type { PanelStack } from './helpers/panel-stack.js';
import { queuePostfixUnavailable, startQueuePostfix } from './helpers/postfix-queue.js';
import type { QueuePostfix } from './helpers/postfix-queue.js';
import { oathtoolCode } from './helpers/totp.js';
import { ADMIN_PASSWORD } from './helpers/app.js';
import { REPO_ROOT } from './helpers/cli.js';

const execFileP = promisify(execFile);
const SHOTS = join(REPO_ROOT, 'test-results/panel');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const PAGES = ['dashboard', 'security', 'domains', 'accounts', 'aliases', 'app-passwords', 'queue', 'bans', 'firewall', 'general', 'limits', 'audit'];
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
  const signIn = async (p: Page, password = ADMIN_PASSWORD) => {
    await p.getByLabel('Password', { exact: true }).fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
  };

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    // A short window, so that the destructive action at the end asks for the second factor again.
    const env: Record<string, string> = { MAILSVC_PANEL_REAUTH_WINDOW: '30' };
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
    await db?.drop();
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
    await page.getByLabel('Domain name').fill('example.org');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByRole('cell', { name: 'example.org', exact: true }).waitFor();

    await go('accounts');
    await page.getByLabel('Address', { exact: true }).fill('alice@example.org');
    await page.getByLabel('Password', { exact: true }).fill('a long enough mailbox password 1');
    await page.getByRole('button', { name: 'Add account' }).click();
    await page.getByRole('cell', { name: 'alice@example.org', exact: true }).waitFor();

    await page.getByRole('link', { name: 'App passwords of alice@example.org' }).click();
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
    await page.getByLabel('greylist-delay').fill('600');
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
    await page.getByText('1 message(s) match.').waitFor();
    await page.getByRole('button', { name: 'Delete 1 message(s)' }).click();
    await expect.poll(async () => (await postfix!.queue()).map((m) => m.sender)).toEqual(['carol@sender.example']);
  }, 60_000);

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

  it('asks for the password and a fresh code before deleting a domain, then deletes it', async () => {
    const started = Date.now();
    await go('domains');
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
