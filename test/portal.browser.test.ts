import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer as createHttpsServer } from 'node:https';
import type { Server } from 'node:https';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { CHROMIUM, launchChromium, newContext } from './helpers/panel-stack.js';
import { skipNotice } from './helpers/services.js';
import { REPO_ROOT } from './helpers/cli.js';
import type { MailboxHost } from '../src/adapters/dovecot/mailbox-host.js';
import type { SieveRules } from '../src/shared/sieve-rules.js';

// The portal page in Debian's Chromium at a phone's width (360 px), through
// a TLS front as nginx would serve it (so the __Host- cookie is the real
// one): signed in and used by keyboard alone, checked with axe-core, under
// the page's own CSP. Dovecot is played by a recorder here (the Sieve and
// quota path on the real daemons is test/portal-mail.test.ts).
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const unavailable = existsSync(CHROMIUM) ? null : `${CHROMIUM} is missing (Debian package chromium)`;
if (unavailable) skipNotice('the user portal in Chromium', unavailable);

/** A busy 2-core machine: wait for the page, up to 15 s. */
const WAIT = { timeout: 15_000 };
const ALICE = 'alice@example.org';
const PW = 'alice-mailbox-pw';

type AxeResult = { violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[] };
async function axe(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = (await page.evaluate('axe.run()')) as AxeResult;
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

class Recorder implements MailboxHost {
  readonly sieve = new Map<string, SieveRules>();
  usage() {
    return Promise.resolve({ storage_bytes: 5 * 1048576, storage_limit_bytes: 100 * 1048576, messages: 12, message_limit: null });
  }
  putSieve(user: string, rules: SieveRules) {
    this.sieve.set(user, rules);
    return Promise.resolve();
  }
}

describe.skipIf(unavailable !== null)('the user portal in Chromium (360 px, keyboard, axe)', { timeout: 120_000 }, () => {
  let db: TestDatabase;
  let t: TestApp;
  let front: Server;
  let origin = '';
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let context: BrowserContext;
  let page: Page;
  const host = new Recorder();
  const problems: string[] = [];

  const focused = async () => (await page.evaluate('(() => { const e = document.activeElement; return { id: e ? e.id : "", text: e ? (e.textContent || "").trim() : "", outline: e ? getComputedStyle(e).outlineStyle : "" }; })()')) as { id: string; text: string; outline: string };
  const tabTo = async (want: (f: Awaited<ReturnType<typeof focused>>) => boolean, max = 60) => {
    for (let i = 0; i < max; i++) {
      await page.keyboard.press('Tab');
      const f = await focused();
      if (want(f)) return f;
    }
    throw new Error(`Tab never reached it; last: ${JSON.stringify(await focused())}`);
  };
  const noSideScroll = async () => expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_ENABLE_USER_PORTAL: 'yes', MAILSVC_MFA_REQUIRED: 'no', MAILSVC_TRUSTED_PROXIES: '127.0.0.1' }, { mailboxHost: host });
    await t.ctx.domains.create('example.org');
    await t.ctx.accounts.create({ address: ALICE, password: PW });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const apiPort = (t.app.server.address() as AddressInfo).port;
    const tls = join(REPO_ROOT, 'test/fixtures/tls');
    front = createHttpsServer({ key: readFileSync(join(tls, 'server-key.pem')), cert: readFileSync(join(tls, 'server-cert.pem')) }, (req, res) => {
      const headers = { ...req.headers, 'x-forwarded-for': req.socket.remoteAddress ?? '127.0.0.1', 'x-forwarded-proto': 'https' };
      const up = httpRequest({ host: '127.0.0.1', port: apiPort, method: req.method, path: req.url, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      up.on('error', () => (res.writeHead(502), res.end()));
      req.pipe(up);
    });
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    origin = `https://127.0.0.1:${(front.address() as AddressInfo).port}`;
    chromium = await launchChromium();
    context = await newContext(chromium.browser, 360);
    page = await context.newPage();
    // The answers the test provokes (401 before sign-in, 400 for the bad dates) log "Failed to load resource"; a CSP refusal or a script error is a problem.
    page.on('console', (m) => { if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text()); });
    page.on('pageerror', (e) => problems.push(e.message));
  }, 120_000);
  afterAll(async () => {
    await chromium?.close();
    await new Promise((r) => front?.close(r));
    await t?.close();
    await db?.drop();
  });

  it('signs in, and works, by keyboard alone; axe finds nothing serious; nothing scrolls sideways at 360 px', async () => {
    await page.goto(`${origin}/portal/`);
    await page.getByRole('heading', { name: 'Sign in to your mailbox' }).waitFor();
    expect(await axe(page)).toEqual([]);
    await noSideScroll();

    // The skip link comes first, then the form, each with a visible focus.
    expect((await tabTo((f) => f.text === 'Skip to content')).outline).toBe('solid');
    await tabTo((f) => f.id === 'si-address');
    await page.keyboard.type(ALICE);
    await page.keyboard.press('Tab');
    await page.keyboard.type(PW);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: ALICE }).waitFor();
    // The focus moved to the page's heading; the usage came from Dovecot's answer.
    await expect.poll(async () => (await focused()).id, WAIT).toBe('home-h');
    await expect.poll(() => page.locator('#usage').textContent(), WAIT).toContain('5.0 MiB used of 100.0 MiB');
    expect(await axe(page)).toEqual([]);
    await noSideScroll();

    // An app password, made by keyboard: shown once, listed with a Revoke button named after it.
    await tabTo((f) => f.id === 'ap-name');
    await page.keyboard.type('phone');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#ap-new').textContent(), WAIT).toMatch(/New app password for phone: [a-z2-7]{12}\.[a-z2-7]{32}/);
    await page.getByRole('button', { name: 'Revoke phone' }).waitFor();

    // Forwarding, by keyboard: it reaches Dovecot's side as Alice's rule.
    await tabTo((f) => f.id === 'fw-to');
    await page.keyboard.type('bob@example.net');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Space');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#status').textContent(), WAIT).toBe('Forwarding saved.');
    expect(host.sieve.get(ALICE)?.forward).toEqual({ to: 'bob@example.net', keepCopy: false });

    // A bad value: the server's message is announced (role=alert), nothing changes.
    await page.locator('#vac-on').focus();
    await page.keyboard.press('Space');
    await page.locator('#vac-subject').focus();
    await page.keyboard.type('Away');
    await page.locator('#vac-start').fill('2030-02-10');
    await page.locator('#vac-end').fill('2030-02-01');
    await page.locator('#vac-body').focus();
    await page.keyboard.type('Back soon');
    await page.locator('#vac-days').focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('alert').textContent(), WAIT).toMatch(/end must not be before its start/);
    expect(host.sieve.get(ALICE)?.vacation).toBeNull();

    // Revoke by keyboard, then sign out by keyboard.
    const at = await tabTo((f) => f.text === 'Revoke', 200);
    await page.keyboard.press('Enter');
    await expect.poll(async () => `${await page.locator('#status').textContent()}|${await page.locator('#error').textContent()}|${JSON.stringify(at)}`, WAIT).toMatch(/^Revoked phone\.\|\|/);
    expect(await t.ctx.appPasswords.list(ALICE)).toEqual([]);
    // The revoke is said once the list is drawn again and the focus is back in the name field (where the next one is made).
    expect((await focused()).id).toBe('ap-name');
    await page.locator('#signout').focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Sign in to your mailbox' }).waitFor();
    expect(problems).toEqual([]);
  });
});
