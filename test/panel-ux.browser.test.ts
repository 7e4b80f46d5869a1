import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { launchChromium, newContext, panelBrowserUnavailable, startPanelStack } from './helpers/panel-stack.js';
import type { PanelStack } from './helpers/panel-stack.js';
import { ADMIN_PASSWORD } from './helpers/app.js';
import { REPO_ROOT } from './helpers/cli.js';
import { findProgram } from './helpers/mail-daemons.js';
import { Type } from '@sinclair/typebox';
import type { TSchema } from '@sinclair/typebox';
import { BackupSettingsPatch } from '../src/modules/backups/schema.js';

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

  /** COMPRESSION's enum as the route validates it: the test adds two values before the service starts. */
  const compression = BackupSettingsPatch.properties.COMPRESSION as unknown as { anyOf: TSchema[] };
  const addedValues = ['lz4', 'xz'];

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    // The schema changes: the panel's control must follow (a select once there are more than four values).
    compression.anyOf.push(...addedValues.map((v) => Type.Literal(v)));
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
    compression.anyOf.splice(compression.anyOf.length - addedValues.length, addedValues.length);
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
      { group: 'Host', links: ['Backups', 'Certificates', 'Limits', 'Updates'] },
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
    // The selected option, or '' while the list re-renders (the server's answers arrive after the pages' and settings'):
    // never a wait on an option that is not there.
    const selected = async (): Promise<string> => {
      const opt = page.locator('[role=option][aria-selected=true]');
      return (await opt.count()) === 0 ? '' : ((await opt.first().textContent({ timeout: 2000 }).catch(() => '')) ?? '');
    };
    await expect.poll(async () => {
      if (/domain findme/.test(await selected())) return true;
      await jump.press('ArrowDown');
      return /domain findme/.test(await selected());
    }, { timeout: 20_000 }).toBe(true);
    await jump.press('Enter');
    await page.getByRole('heading', { name: 'Domains', level: 1 }).waitFor();
    await expect.poll(() => page.locator('tbody tr').allInnerTexts(), { timeout: 15_000 }).toEqual([expect.stringContaining('findme.example')]);
    expect(await page.getByLabel('Name contains').inputValue()).toBe('findme.example');
    // An account.
    await jump.fill('zoe@');
    const option = page.getByRole('option', { name: /account zoe@findme\.example/ });
    await option.waitFor();
    await expect.poll(async () => {
      if ((await option.getAttribute('aria-selected', { timeout: 2000 }).catch(() => null)) === 'true') return true;
      await jump.press('ArrowDown');
      return (await option.getAttribute('aria-selected', { timeout: 2000 }).catch(() => null)) === 'true';
    }, { timeout: 20_000 }).toBe(true);
    await jump.press('Enter');
    await page.getByRole('heading', { name: 'Accounts', level: 1 }).waitFor();
    await expect.poll(() => page.locator('tbody tr').allInnerTexts(), { timeout: 15_000 }).toEqual([expect.stringContaining('zoe@findme.example')]);
    // A setting: its page, with the focus at its input.
    await jump.fill('oncalendar');
    await page.getByRole('option', { name: /setting .*MAILSVC_BACKUP_ONCALENDAR/ }).waitFor();
    await jump.press('Enter');
    await page.getByRole('heading', { name: 'Backups', level: 1 }).waitFor();
    await expect.poll(() => page.evaluate('document.activeElement && document.activeElement.id'), { timeout: 15_000 }).toBe('backup-ONCALENDAR');
    // A limit, and nothing for nonsense.
    await jump.fill('message size');
    await page.getByRole('option', { name: /setting message-size-limit/ }).waitFor();
    await jump.fill('qqqzzz');
    await page.getByRole('option', { name: /Nothing matches/ }).waitFor();
    await jump.press('Escape');
    expect(await jump.getAttribute('aria-expanded')).toBe('false');
  }, 60_000);

  it('builds the backup settings from the API\'s schema: enum → segmented or select (the test\'s schema change shows), yes/no → switch, days with their unit, the calendar picker with systemd\'s next runs, a list as chips; each with its default and source', async () => {
    await go('backups');
    const form = page.getByRole('form', { name: 'Backup settings' });
    const control = (id: string) => form.locator(`[data-control]:has(#backup-${id})`);
    await control('COMPRESSION').waitFor();
    // The enum the route validates with, with the two values this test added: five values make a select.
    expect(await control('COMPRESSION').getAttribute('data-control')).toBe('select');
    const allowed = compression.anyOf.map((l) => String((l as unknown as { const: string }).const));
    expect(allowed).toEqual(['gzip', 'zstd', 'none', ...addedValues]);
    expect(await form.locator('#backup-COMPRESSION option').allTextContents()).toEqual(allowed);
    expect(await control('COMPRESSION').textContent()).toContain('Default: gzip');
    expect(await control('COMPRESSION').textContent()).toContain('Current value: the default');
    // Three values: a segmented control of radios.
    expect(await control('TYPE').getAttribute('data-control')).toBe('segmented');
    expect(await control('TYPE').getByRole('radio').evaluateAll((els) => els.map((e) => e.getAttribute('value') ?? ''))).toEqual(['auto', 'full', 'incremental']);
    // yes/no: a switch.
    const redis = form.getByRole('switch', { name: /Include Redis/ });
    expect(await redis.isChecked()).toBe(false);
    // Days: a number with its unit.
    expect(await control('RETENTION_DAYS').getAttribute('data-control')).toBe('unit');
    expect(await form.locator('#backup-RETENTION_DAYS').inputValue()).toBe('14');
    expect(await control('RETENTION_DAYS').locator('.unit').textContent()).toBe('days');
    // A list: chips.
    expect(await control('REMOTE_TARGETS').getAttribute('data-control')).toBe('chips');

    // The calendar: weekly on Saturday at 04:00, and the next runs as systemd computes them.
    const cal = control('ONCALENDAR');
    expect(await cal.getAttribute('data-control')).toBe('calendar');
    await cal.getByRole('radio', { name: 'weekly' }).check();
    await cal.getByRole('combobox').selectOption('Sat');
    await cal.locator('input[type=time]').fill('04:00');
    await expect.poll(() => form.locator('#backup-ONCALENDAR').inputValue()).toBe('Sat *-*-* 04:00:00');
    if (findProgram('systemd-analyze')) {
      const preview = page.getByTestId('backup-ONCALENDAR-preview');
      // systemd's normalized form of the new expression: the preview is of it, not of the value before.
      await expect.poll(() => preview.textContent(), { timeout: 15_000 }).toContain('Sat *-*-* 04:00:00: next');
      const runs = preview.locator('time');
      await expect.poll(() => runs.count()).toBe(5);
      for (const at of await runs.evaluateAll((els) => els.map((e) => e.getAttribute('datetime') ?? ''))) {
        expect(new Date(at).getUTCDay(), at).toBe(6);
        expect(at).toMatch(/T04:00:00Z$/);
      }
    }

    // Save the switch, a choice and the calendar: stored, and the form says so.
    await redis.check();
    await control('TYPE').getByRole('radio', { name: 'full', exact: true }).check();
    await form.locator('#backup-RETENTION_DAYS').fill('30');
    await form.getByRole('button', { name: /Save 4 change/ }).click();
    await form.getByText(/^Saved /).waitFor();
    const shown = JSON.parse((await viaPanel('GET', '/admin/backups/settings')).body) as { settings: Record<string, unknown>; sources: Record<string, string> };
    expect(shown.settings).toMatchObject({ INCLUDE_REDIS: 'yes', TYPE: 'full', RETENTION_DAYS: 30, ONCALENDAR: 'Sat *-*-* 04:00:00' });
    expect(shown.sources).toMatchObject({ INCLUDE_REDIS: 'stored', TYPE: 'stored', RETENTION_DAYS: 'stored', COMPRESSION: 'default' });
    expect(await control('TYPE').textContent()).toContain('Current value: stored here');
    await page.screenshot({ path: join(SHOTS, 'backups-settings-controls.png'), fullPage: true });
  }, 60_000);

  it('shows limits that are sizes and durations as a number with its unit (50 MiB, 5 min)', async () => {
    await go('limits');
    const size = page.getByRole('row', { name: /message-size-limit/ });
    expect(await page.getByLabel('message-size-limit').inputValue()).toBe('50');
    expect(await size.getByRole('combobox', { name: 'Unit' }).inputValue()).toBe('MiB');
    expect(await size.textContent()).toContain('50 MiB');
    await page.getByLabel('message-size-limit').fill('2');
    await size.getByRole('combobox', { name: 'Unit' }).selectOption('GiB');
    // 2 GiB is above the largest (2048 MiB is the top: exactly 2 GiB is allowed); 3 GiB is not.
    await page.getByLabel('message-size-limit').fill('3');
    await page.getByRole('button', { name: /Save/ }).click();
    await expect.poll(() => page.locator('#limit-message-size-limit-err').textContent()).toBeTruthy();
    await page.getByLabel('message-size-limit').fill('64');
    await size.getByRole('combobox', { name: 'Unit' }).selectOption('MiB');
    await page.getByRole('button', { name: /Save/ }).click();
    await page.getByText('saved').waitFor();
    expect((JSON.parse((await viaPanel('GET', '/admin/limits')).body) as Record<string, number>)['message-size-limit']).toBe(64 * 1024 * 1024);
  }, 60_000);

  it('the dashboard answers first in one line (needs attention, how many, links), shows daemons not installed once, and the queue and traffic as charts', async () => {
    await go('dashboard');
    const summary = page.getByTestId('dash-summary');
    // Nothing backed up yet on this fresh stack: at least that needs attention, in words (not colour alone).
    await expect.poll(() => summary.textContent(), { timeout: 30_000 }).toMatch(/^(⚠ )?Needs attention: \d+ — /);
    const n = Number(/Needs attention: (\d+)/.exec((await summary.textContent()) ?? '')?.[1]);
    expect(n).toBeGreaterThanOrEqual(1);
    expect(await summary.locator('a, button').count()).toBe(n);
    const health = JSON.parse((await viaPanel('GET', '/health/details')).body) as { components: Record<string, { status: string; detail: string | null }> };
    const absent = Object.entries(health.components).filter(([, c]) => c.status === 'unknown' && /not installed/i.test(c.detail ?? '')).map(([name]) => name);
    const down = Object.entries(health.components).filter(([, c]) => c.status === 'down').map(([name]) => name);
    for (const name of down) expect(await summary.textContent()).toContain(`${name} is down`);
    await page.getByTestId('components').waitFor();
    if (absent.length > 0) {
      expect(await page.getByTestId('not-installed').textContent()).toBe(`Not installed here: ${absent.join(', ')}`);
      for (const name of absent) expect(await page.getByTestId('components').textContent()).not.toContain(`${name}:`);
    } else expect(await page.getByTestId('not-installed').count()).toBe(0);
    // The queue by state as bars, with the numbers in the chart's name; the week's traffic as its chart.
    const counts = JSON.parse((await viaPanel('GET', '/admin/queue/counts')).body) as Record<string, number | string>;
    if (Object.keys(counts).length > 0 && !('detail' in counts)) {
      const chart = page.getByTestId('queue-chart');
      expect(await chart.getAttribute('aria-label')).toBe(`Queue: ${Object.entries(counts).map(([q, c]) => `${q} ${c}`).join(', ')}`);
    } else if (/is not (installed|set up) here/.test(String(counts.detail))) {
      // Postfix absent here: said once, quietly, in the queue's card, not as an error.
      await page.getByTestId('queue-absent').waitFor();
      expect(await page.getByTestId('queue-absent').textContent()).toBe(String(counts.detail));
      expect(await page.locator('.card', { has: page.getByRole('heading', { name: 'Mail queue' }) }).getByRole('alert').count()).toBe(0);
    }
    await page.getByTestId('traffic-chart').waitFor();
    // A link goes where the problem is.
    await summary.getByRole('link', { name: 'no backup yet' }).click();
    await page.getByRole('heading', { name: 'Backups', level: 1 }).waitFor();
  }, 60_000);

  it('takes screenshots of every page at 1280 and 360 px, light and dark', async () => {
    const pages = ['dashboard', 'domains', 'accounts', 'aliases', 'app-passwords', 'queue', 'dns', 'stats', 'security', 'bans', 'firewall', 'audit', 'backups', 'limits', 'general'];
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const width of [1280, 360]) {
        await page.setViewportSize({ width, height: 900 });
        for (const id of pages) {
          await go(id);
          await page.waitForLoadState('networkidle');
          await page.screenshot({ path: join(SHOTS, `ux-${id}${width === 360 ? '-360' : ''}${scheme === 'dark' ? '-dark' : ''}.png`), fullPage: true });
        }
      }
    }
    // Dark really is dark: the page background follows the scheme.
    expect(await page.evaluate('getComputedStyle(document.documentElement).backgroundColor')).toBe('rgb(20, 23, 27)');
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 900 });
  }, 180_000);
});
