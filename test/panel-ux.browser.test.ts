import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { launchChromium, newContext, panelBrowserUnavailable, startPanelStack } from './helpers/panel-stack.js';
import type { PanelStack } from './helpers/panel-stack.js';
import { ADMIN_PASSWORD } from './helpers/app.js';
import { REPO_ROOT } from './helpers/cli.js';

/**
 * The panel's navigation, controls, dashboard and lists in Chromium against the
 * real service (SQLite; the helper in a namespace of its own). Password sign-in
 * only (MAILSVC_MFA_REQUIRED=no): the second factor is test/panel.browser.test.ts's.
 */
const SHOTS = join(REPO_ROOT, 'test-results/panel');
const unavailable = panelBrowserUnavailable();

describe.skipIf(unavailable !== null)('the panel administrators enjoy (Chromium, real service)', () => {
  let db: TestDatabase;
  let stack: PanelStack;
  let chromium: { browser: Browser; close(): Promise<void> };
  let context: BrowserContext;
  let page: Page;
  const go = async (hash: string) => {
    await page.goto(`${stack.origin}/panel/#/${hash}`);
    await page.locator('main h1').first().waitFor();
  };
  /** A call through the browser's own panel session (with its CSRF token). */
  const viaPanel = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: string }> =>
    (await page.evaluate(
      `(async () => { const s = await (await fetch('/panel/session')).json(); const r = await fetch('/panel/api${path}', { method: ${JSON.stringify(method)}, headers: { 'content-type': 'application/json', 'x-csrf-token': s.csrf_token }, body: ${JSON.stringify(body === undefined ? null : JSON.stringify(body))} }); return { status: r.status, body: await r.text() }; })()`,
    )) as { status: number; body: string };
  const sidebar = () => page.getByRole('navigation', { name: 'Pages' });

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    stack = await startPanelStack(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
    chromium = await launchChromium();
    context = await newContext(chromium.browser);
    page = await context.newPage();
    page.on('dialog', (d) => void d.accept());
    await page.goto(`${stack.origin}/panel/`);
    await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    for (const name of ['findme.example', 'other.example']) expect((await viaPanel('POST', '/domains', { name })).status).toBe(201);
    expect((await viaPanel('POST', '/accounts', { address: 'zoe@findme.example', password: 'a long mailbox password 7' })).status).toBe(201);
  }, 120_000);
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail' && page) {
      await page.screenshot({ path: join(SHOTS, `ux-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`), fullPage: true }).catch(() => undefined);
      console.log(`page at failure (${page.url()}):\n${await page.locator('body').innerText().catch(() => '?')}`);
    }
  });
  afterAll(async () => {
    await chromium?.close();
    await stack?.close();
    await db?.drop();
  });

  it('groups the sidebar by task (Mail, Delivery, Security, Host) and marks the current page', async () => {
    await go('queue');
    const groups = await sidebar().locator('.nav-group').evaluateAll((els) =>
      els.map((g) => ({ group: g.querySelector('h2')?.textContent ?? '', links: [...g.querySelectorAll('a')].map((a) => a.textContent ?? '') })),
    );
    expect(groups).toEqual([
      { group: 'Mail', links: ['Domains', 'Accounts', 'Aliases', 'App passwords'] },
      { group: 'Delivery', links: ['Queue', 'DNS and deliverability', 'Statistics'] },
      { group: 'Security', links: ['Sign-in and factors', 'Bans', 'Firewall', 'Audit log'] },
      { group: 'Host', links: ['Backups', 'Limits', 'Updates'] },
    ]);
    // Each group's list is named by its heading; exactly the current page is marked.
    expect(await sidebar().getByRole('list', { name: 'Delivery' }).getByRole('link').count()).toBe(3);
    const current = async () => sidebar().locator('[aria-current="page"]').allTextContents();
    expect(await current()).toEqual(['Queue']);
    await sidebar().getByRole('link', { name: 'Backups' }).click();
    await page.getByRole('heading', { name: 'Backups', level: 1 }).waitFor();
    expect(await current()).toEqual(['Backups']);
  });

  it('folds the sidebar into a menu on a small screen: the button says whether it is open; a choice closes it', async () => {
    await page.setViewportSize({ width: 360, height: 800 });
    try {
      await go('dashboard');
      const menu = page.getByRole('button', { name: 'Menu' });
      expect(await menu.getAttribute('aria-expanded')).toBe('false');
      expect(await sidebar().isVisible()).toBe(false);
      await menu.click();
      expect(await menu.getAttribute('aria-expanded')).toBe('true');
      await sidebar().getByRole('link', { name: 'Accounts' }).click();
      await page.getByRole('heading', { name: 'Accounts', level: 1 }).waitFor();
      expect(await menu.getAttribute('aria-expanded')).toBe('false');
      expect(await sidebar().isVisible()).toBe(false);
      // Nothing is wider than the screen.
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('the search jumps to a domain, an account (both found on the server) and a setting, by keyboard', async () => {
    await go('dashboard');
    const jump = page.getByRole('combobox', { name: /Jump to/ });
    // A domain: its list filtered to it.
    await jump.fill('findme');
    await page.getByRole('option', { name: /domain findme\.example/ }).waitFor();
    await page.getByRole('option', { name: /account zoe@findme\.example/ }).waitFor();
    while (!/domain findme/.test((await page.locator('[role=option][aria-selected=true]').textContent()) ?? '')) await jump.press('ArrowDown');
    await jump.press('Enter');
    await page.getByRole('heading', { name: 'Domains', level: 1 }).waitFor();
    await expect.poll(() => page.locator('tbody tr').allInnerTexts()).toEqual([expect.stringContaining('findme.example')]);
    expect(await page.getByLabel('Name contains').inputValue()).toBe('findme.example');
    // An account.
    await jump.fill('zoe@');
    const option = page.getByRole('option', { name: /account zoe@findme\.example/ });
    await option.waitFor();
    while ((await option.getAttribute('aria-selected')) !== 'true') await jump.press('ArrowDown');
    await jump.press('Enter');
    await page.getByRole('heading', { name: 'Accounts', level: 1 }).waitFor();
    await expect.poll(() => page.locator('tbody tr').allInnerTexts()).toEqual([expect.stringContaining('zoe@findme.example')]);
    // A setting: its page, with the focus at its input.
    await jump.fill('oncalendar');
    await page.getByRole('option', { name: /setting .*MAILSVC_BACKUP_ONCALENDAR/ }).waitFor();
    await jump.press('Enter');
    await page.getByRole('heading', { name: 'Backups', level: 1 }).waitFor();
    await expect.poll(() => page.evaluate('document.activeElement && document.activeElement.id')).toBe('backup-ONCALENDAR');
    // A limit, and nothing for nonsense.
    await jump.fill('message size');
    await page.getByRole('option', { name: /setting message-size-limit/ }).waitFor();
    await jump.fill('qqqzzz');
    await page.getByRole('option', { name: /Nothing matches/ }).waitFor();
    await jump.press('Escape');
    expect(await jump.getAttribute('aria-expanded')).toBe('false');
  });
});
