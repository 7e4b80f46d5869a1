import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { launchChromium, newContext, panelBrowserUnavailable, startPanelStack } from './helpers/panel-stack.js';
import type { PanelStack } from './helpers/panel-stack.js';
import { ADMIN_PASSWORD } from './helpers/app.js';
import { REPO_ROOT } from './helpers/cli.js';
import { queuePostfixUnavailable, startQueuePostfix } from './helpers/postfix-queue.js';
import type { QueuePostfix } from './helpers/postfix-queue.js';

/**
 * The panel's lists in Chromium against the real service (SQLite, a real
 * Postfix queue): column headings sort on the server (aria-sort follows, by
 * mouse and by keyboard, the order kept in the URL), the new filters narrow
 * the list, and bulk selection on the queue acts on exactly the rows chosen,
 * its result shown in place. axe-clean with rows, sorted and selected.
 */
const SHOTS = join(REPO_ROOT, 'test-results/panel');
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const unavailable = panelBrowserUnavailable();
const noPostfix = queuePostfixUnavailable();

type AxeResult = { violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[] };

describe.skipIf(unavailable !== null)('the panel lists: sort, filters, bulk selection (Chromium, real service)', () => {
  let db: TestDatabase;
  let stack: PanelStack;
  let chromium: { browser: Browser; close(): Promise<void> };
  let context: BrowserContext;
  let page: Page;
  let postfix: QueuePostfix | undefined;
  const dialogs: string[] = [];
  const go = async (hash: string) => {
    await page.goto(`${stack.origin}/panel/#/${hash}`);
    await page.locator('main h1').first().waitFor();
  };
  const viaPanel = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: string }> =>
    (await page.evaluate(
      `(async () => { const s = await (await fetch('/panel/session')).json(); const r = await fetch('/panel/api${path}', { method: ${JSON.stringify(method)}, headers: { 'content-type': 'application/json', 'x-csrf-token': s.csrf_token }, body: ${JSON.stringify(body === undefined ? null : JSON.stringify(body))} }); return { status: r.status, body: await r.text() }; })()`,
    )) as { status: number; body: string };
  /** The first cell of every row shown (or the cell after the checkbox). */
  const column = (n: number) => page.locator(`tbody tr td:nth-child(${n})`).allInnerTexts();
  const header = (name: string) => page.locator('th', { has: page.getByRole('button', { name, exact: true }) });
  const axe = async (): Promise<string[]> => {
    await page.evaluate(AXE);
    const result = (await page.evaluate('axe.run()')) as AxeResult;
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((x) => x.target.join(' ')).join(', ')}`);
  };

  // 30 domains: more than one page of 25, so an order the server did not make would show on the first page.
  const many = Array.from({ length: 30 }, (_, i) => `d${String(i).padStart(2, '0')}.example`);

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    const env: Record<string, string> = { MAILSVC_MFA_REQUIRED: 'no' };
    if (noPostfix === null) {
      postfix = await startQueuePostfix();
      await postfix.send([
        { from: 'alice@sender.example', to: ['bob@far.example'] },
        { from: 'carol@sender.example', to: ['dan@far.example'] },
        { from: 'erin@sender.example', to: ['fay@far.example'] },
      ]);
      await postfix.settle(3);
      env.MAILSVC_POSTFIX_CONFIG_DIR = postfix.configDir;
    }
    stack = await startPanelStack(db.url, env);
    chromium = await launchChromium();
    context = await newContext(chromium.browser);
    page = await context.newPage();
    page.on('dialog', (d) => void (dialogs.push(d.message()), d.accept()));
    await page.goto(`${stack.origin}/panel/`);
    await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    for (const name of many) expect((await viaPanel('POST', '/domains', { name })).status, name).toBe(201);
    for (const address of ['amy@d29.example', 'bob@d29.example', 'cat@d00.example']) {
      expect((await viaPanel('POST', '/accounts', { address, password: 'a long mailbox password 7' })).status).toBe(201);
    }
    for (const [source, to] of [['sales@d01.example', 'cat@d00.example'], ['info@d29.example', 'amy@d29.example'], ['post@d02.example', 'bob@d29.example']] as const) {
      expect((await viaPanel('POST', '/aliases', { source, destinations: [to] })).status).toBe(201);
    }
  }, 180_000);
  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail' && page) {
      await page.screenshot({ path: join(SHOTS, `lists-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`), fullPage: true }).catch(() => undefined);
      console.log(`page at failure (${page.url()}):\n${await page.locator('body').innerText().catch(() => '?')}`);
    }
  });
  afterAll(async () => {
    await chromium?.close();
    await stack?.close();
    await db?.drop();
    await postfix?.stop();
  });

  it('a column heading sorts on the server: the first page changes, aria-sort follows, the order is in the URL and survives a reload', async () => {
    await go('domains');
    await expect.poll(() => column(1)).toEqual(many.slice(0, 25));
    expect(await header('Name').getAttribute('aria-sort')).toBe('ascending');
    expect(await header('Created').getAttribute('aria-sort')).toBe('none');
    // Not sortable: no aria-sort, no button.
    expect(await page.locator('th', { hasText: 'Actions' }).getAttribute('aria-sort')).toBeNull();

    const asked = page.waitForRequest((r) => r.url().includes('/panel/api/domains?') && r.url().includes('sort=-name'));
    await page.getByRole('button', { name: 'Name', exact: true }).click();
    await asked;
    // The server's order: the last five names, never on the first page before, now lead it.
    await expect.poll(() => column(1)).toEqual([...many].reverse().slice(0, 25));
    expect(await header('Name').getAttribute('aria-sort')).toBe('descending');
    expect(page.url()).toMatch(/#\/domains\?sort=-name$/);
    // The pager is a navigation landmark of its own, named for the list it pages; "Pages" stays the sidebar's name alone.
    expect(await page.getByRole('navigation', { name: 'Pages', exact: true }).count()).toBe(1);
    expect(await page.getByRole('navigation', { name: 'Paging through Domains', exact: true }).count()).toBe(1);
    // Paging keeps the order.
    await page.getByRole('button', { name: 'Next' }).click();
    await expect.poll(() => column(1)).toEqual([...many].reverse().slice(25));
    await page.getByRole('button', { name: 'Previous' }).click();

    // Another column starts ascending; the others go back to none.
    await page.getByRole('button', { name: 'Accounts', exact: true }).click();
    await expect.poll(() => header('Accounts').getAttribute('aria-sort')).toBe('ascending');
    expect(await header('Name').getAttribute('aria-sort')).toBe('none');
    await page.getByRole('button', { name: 'Accounts', exact: true }).click();
    await expect.poll(() => column(1).then((c) => c.slice(0, 2))).toEqual(['d29.example', 'd00.example']);
    expect(await header('Accounts').getAttribute('aria-sort')).toBe('descending');

    await page.reload();
    await expect.poll(() => column(1).then((c) => c.slice(0, 2))).toEqual(['d29.example', 'd00.example']);
    expect(await header('Accounts').getAttribute('aria-sort')).toBe('descending');
  });

  it('sorts by keyboard: Tab to a heading, Enter and Space turn the order around, the focus stays on it, visibly', async () => {
    await go('accounts');
    await expect.poll(() => column(1)).toEqual(['amy@d29.example', 'bob@d29.example', 'cat@d00.example']);
    /** The focused element: its tag, its text and its outline. */
    const focused = async () =>
      (await page.evaluate("(() => { const el = document.activeElement; return el ? el.tagName + ' ' + (el.textContent || '').trim() + ' | ' + getComputedStyle(el).outlineStyle : ''; })()")) as string;
    const onAddress = async () => /^BUTTON Address\b/.test(await focused());
    // From the page heading, by Tab alone.
    for (let i = 0; i < 40 && !(await onAddress()); i++) await page.keyboard.press('Tab');
    expect(await focused()).toMatch(/^BUTTON Address ▲ \| solid$/);
    await page.keyboard.press('Enter');
    await expect.poll(() => column(1)).toEqual(['cat@d00.example', 'bob@d29.example', 'amy@d29.example']);
    expect(await header('Address').getAttribute('aria-sort')).toBe('descending');
    expect(await focused()).toMatch(/^BUTTON Address ▼ \| solid$/);
    await page.keyboard.press('Space');
    await expect.poll(() => column(1)).toEqual(['amy@d29.example', 'bob@d29.example', 'cat@d00.example']);
    expect(await header('Address').getAttribute('aria-sort')).toBe('ascending');
    expect(await focused()).toMatch(/^BUTTON Address ▲ \| solid$/);
  });

  it('the new filters narrow the list on the server: aliases by a part of source or destination, the audit log by who', async () => {
    await go('aliases');
    await expect.poll(() => column(1)).toEqual(['info@d29.example', 'post@d02.example', 'sales@d01.example']);
    const asked = page.waitForRequest((r) => r.url().includes('/panel/api/aliases?') && r.url().includes('q=d29'));
    await page.getByLabel('Address contains').fill('d29');
    await page.getByRole('button', { name: 'Filter' }).click();
    await asked;
    // info@d29 by its source, post@d02 by its destination bob@d29.
    await expect.poll(() => column(1)).toEqual(['info@d29.example', 'post@d02.example']);
    // Sorting keeps the filter.
    await page.getByRole('button', { name: 'Source', exact: true }).click();
    await expect.poll(() => column(1)).toEqual(['post@d02.example', 'info@d29.example']);

    await go('audit');
    await expect.poll(async () => (await column(2)).length).toBeGreaterThan(0);
    await page.getByLabel('Who').fill('nobody-here');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No change is recorded for this filter').waitFor();
    await page.getByLabel('Who').fill('admin');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(async () => new Set(await column(2))).toEqual(new Set(['admin']));
    // The newest first by default; When turns it around.
    expect(await header('When').getAttribute('aria-sort')).toBe('descending');
    await page.getByRole('button', { name: 'When', exact: true }).click();
    await expect.poll(() => header('When').getAttribute('aria-sort')).toBe('ascending');
    await expect.poll(async () => (await column(4))[0]).toBe('POST /domains');
  });

  it.skipIf(noPostfix !== null)('bulk selection holds and deletes exactly the selected messages, the result shown in place without a reload', async () => {
    const queue = async () => Object.fromEntries((await postfix!.queue()).map((m) => [m.sender, m.queue_name]));
    const ids = Object.fromEntries((await postfix!.queue()).map((m) => [m.sender, m.queue_id]));
    await go('queue');
    await expect.poll(() => page.locator('tbody tr').count()).toBe(3);
    const bar = page.getByRole('group', { name: 'Act on the selected messages' });
    // Nothing selected: no action offered.
    expect(await bar.getByRole('button').count()).toBe(0);
    // A mark that a full page load would lose.
    await page.evaluate('window.__noReload = true');
    await page.getByLabel(`Select message ${ids['alice@sender.example']}`, { exact: true }).check();
    await page.getByLabel(`Select message ${ids['erin@sender.example']}`, { exact: true }).check();
    await bar.getByText('2 messages selected.').waitFor();
    expect(await page.getByLabel('Select every message on this page').evaluate((el) => (el as unknown as { indeterminate: boolean }).indeterminate)).toBe(true);
    await bar.getByRole('button', { name: 'Hold 2 selected' }).click();
    await expect.poll(() => page.getByTestId('bulk-result').textContent()).toBe('✓ 2 messages held.');
    expect(await queue()).toEqual({ 'alice@sender.example': 'hold', 'carol@sender.example': 'deferred', 'erin@sender.example': 'hold' });
    // The list reloads in place: the selection is cleared, the rows show their new queue.
    await expect.poll(() => page.locator('tbody tr', { hasText: 'alice@sender.example' }).locator('td:nth-child(3)').textContent()).toBe('hold');
    expect(await page.locator('tbody input[type=checkbox]:checked').count()).toBe(0);

    // Select all, then leave one out: the delete asks first, names the count, acts on the two.
    await page.getByLabel('Select every message on this page').check();
    await bar.getByText('3 messages selected.').waitFor();
    await page.getByLabel(`Select message ${ids['carol@sender.example']}`, { exact: true }).uncheck();
    await page.screenshot({ path: join(SHOTS, 'lists-queue-selected.png'), fullPage: true });
    expect(await axe()).toEqual([]);
    dialogs.length = 0;
    await bar.getByRole('button', { name: 'Delete 2 selected' }).click();
    await expect.poll(() => page.getByTestId('bulk-result').textContent()).toBe('✓ 2 messages deleted.');
    expect(dialogs).toEqual(['Delete 2 messages from the queue? Their senders are not told.']);
    expect(await queue()).toEqual({ 'carol@sender.example': 'deferred' });
    await expect.poll(() => page.locator('tbody tr').count()).toBe(1);
    expect(await page.evaluate('window.__noReload')).toBe(true);
  });

  it('the list pages stay axe-clean, sorted and filtered, at 1280 and 360 px', async () => {
    const problems: string[] = [];
    for (const width of [1280, 360]) {
      await page.setViewportSize({ width, height: 900 });
      for (const hash of ['domains?sort=-accounts', 'accounts?sort=quota_bytes', 'aliases', 'queue?sort=-arrival_time', 'bans', 'audit?sort=action']) {
        await go(hash);
        await page.waitForLoadState('networkidle');
        problems.push(...(await axe()).map((p) => `${hash} @${width}: ${p}`));
        if (width === 360) expect(await page.evaluate('document.documentElement.scrollWidth'), hash).toBeLessThanOrEqual(360);
      }
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(problems).toEqual([]);
  }, 90_000);
});
