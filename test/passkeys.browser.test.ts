import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { createTestDatabase } from './helpers/dialects.js';
import type { TestDatabase } from './helpers/dialects.js';
import { ADMIN_PASSWORD, startTestApp } from './helpers/app.js';
import type { TestApp } from './helpers/app.js';
import { CHROMIUM, launchChromium } from './helpers/panel-stack.js';
import { enableTotp } from './helpers/flows.js';
import { oathtoolCode } from './helpers/totp.js';
import { freePort } from './helpers/mail-daemons.js';
import { skipNotice } from './helpers/services.js';
import { REPO_ROOT } from './helpers/cli.js';
import { panelBuildDir } from '../src/modules/panel/index.js';

/**
 * Passkeys in Debian's Chromium against the real service, with the DevTools
 * protocol's virtual authenticator. The panel is served on http://localhost
 * (a secure context; the RP ID is `localhost`, which an address could not be),
 * and a second origin on another port serves the same panel: the phishing site.
 */
const unavailable = existsSync(CHROMIUM) ? null : `${CHROMIUM} is missing (Debian package chromium)`;
if (unavailable) skipNotice('passkeys in Chromium', unavailable);

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const SHOTS = join(REPO_ROOT, 'test-results/passkeys');
const FAIL_LIMIT = 5;
/** MAILSVC_RECORD_WEBAUTHN=1 writes the ceremonies of this run into the fixtures the unit tests replay. */
const RECORD = process.env.MAILSVC_RECORD_WEBAUTHN === '1';
const FIXTURES = join(REPO_ROOT, 'test/fixtures/webauthn');

type AxeResult = { violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[] };
type Json = Record<string, unknown>;
type VirtualCredential = { credentialId: string; isResidentCredential: boolean; rpId: string; privateKey: string; userHandle: string; signCount: number };

async function axe(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const result = (await page.evaluate('axe.run()')) as AxeResult;
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** A page with a virtual authenticator of its own (ctap2, resident keys, user verification). */
async function withAuthenticator(page: Page, transport: 'internal' | 'usb'): Promise<{ cdp: CDPSession; id: string }> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport, hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  return { cdp, id: authenticatorId };
}

describe.skipIf(unavailable !== null)('passkeys in Chromium, against the real service', () => {
  let db: TestDatabase;
  let t: TestApp;
  let origin: string;
  let phishing: Server;
  let phishingOrigin: string;
  let chromium: { browser: Browser; close(): Promise<void> };
  let context: BrowserContext;
  let page: Page;
  let auth: { cdp: CDPSession; id: string };
  let secret = '';
  let lastStep = 0;
  /** The assertion the last passkey sign-in sent (for the replay). */
  let lastAssertion: Json | null = null;
  const recorded: Record<string, unknown> = {};

  const nextCode = async (): Promise<string> => {
    let now = Date.now();
    while (Math.floor(now / 30_000) <= lastStep) {
      await new Promise((r) => setTimeout(r, 1000));
      now = Date.now();
    }
    lastStep = Math.floor(now / 30_000);
    return oathtoolCode(secret, now);
  };
  const go = async (p: Page, base: string, id: string) => {
    await p.goto(`${base}/panel/#/${id}`);
    await p.locator('h1').first().waitFor();
  };
  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Json }> =>
    (await page.evaluate(
      async ([m, p, b]) => {
        const csrf = (await (await fetch('/panel/session')).json()) as { csrf_token?: string };
        const r = await fetch(`/panel/api${p}`, { method: m, headers: { 'content-type': 'application/json', 'x-csrf-token': csrf.csrf_token ?? '' }, body: b === undefined ? undefined : JSON.stringify(b) });
        const text = await r.text();
        return { status: r.status, body: text ? (JSON.parse(text) as Json) : {} };
      },
      [method, path, body] as const,
    )) as { status: number; body: Json };
  /** A POST to the panel's session endpoints from the page (same origin). */
  const sessionPost = async (p: Page, path: string, body?: unknown): Promise<{ status: number; body: Json }> =>
    (await p.evaluate(
      async ([url, b]) => {
        const r = await fetch(`/panel/session${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: b === undefined ? undefined : JSON.stringify(b) });
        const text = await r.text();
        return { status: r.status, body: text ? (JSON.parse(text) as Json) : {} };
      },
      [path, body] as const,
    )) as { status: number; body: Json };
  const signOut = async (p: Page) => {
    await p.getByRole('button', { name: 'Sign out' }).click();
    await p.getByRole('heading', { name: 'Sign in to mailsvc' }).waitFor();
  };
  const password = async (p: Page) => {
    await p.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
    await p.getByRole('button', { name: 'Sign in', exact: true }).click();
  };
  const auditActions = async (): Promise<string[]> =>
    (await t.ctx.db.selectFrom('audit_log').select(['action']).orderBy('at').execute()).map((r) => r.action);
  const credentials = async (a: { cdp: CDPSession; id: string }): Promise<VirtualCredential[]> =>
    ((await a.cdp.send('WebAuthn.getCredentials', { authenticatorId: a.id })) as { credentials: VirtualCredential[] }).credentials;
  const storedCounter = async (): Promise<number> => Number((await t.ctx.db.selectFrom('admin_passkeys').select('counter').executeTakeFirstOrThrow()).counter);

  beforeAll(async () => {
    // The panel as it ships, with this checkout's sources: test/global-setup.ts built it before any file ran
    // (building it again here replaced the panel under the other browser tests running beside this one).
    expect(existsSync(join(panelBuildDir(), 'index.html'))).toBe(true);
    mkdirSync(SHOTS, { recursive: true });
    db = await createTestDatabase('sqlite');
    const port = await freePort();
    origin = `http://localhost:${port}`;
    t = await startTestApp(db.url, {
      MAILSVC_ENABLE_WEB_PANEL: 'yes',
      MAILSVC_PANEL_DEV_HTTP: 'yes',
      MAILSVC_PANEL_ORIGIN: origin,
      MAILSVC_WEBAUTHN_USER_VERIFICATION: 'required',
      MAILSVC_API_AUTH_FAIL_LIMIT: String(FAIL_LIMIT),
      MAILSVC_API_AUTH_BLOCK_SECONDS: '5',
    });
    await t.app.listen({ host: '127.0.0.1', port });
    // Another origin serving the very same panel (a relaying phishing site, as it would for TOTP codes).
    phishing = createServer((req, res) => {
      const up = httpRequest({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      up.on('error', () => (res.writeHead(502), res.end()));
      req.pipe(up);
    });
    const otherPort = await freePort();
    await new Promise<void>((r) => phishing.listen(otherPort, '127.0.0.1', r));
    phishingOrigin = `http://localhost:${otherPort}`;
    secret = await enableTotp(t);
    lastStep = Math.floor((Date.now() - 30_000) / 30_000);
    chromium = await launchChromium();
    context = await chromium.browser.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
    page = await context.newPage();
    auth = await withAuthenticator(page, 'internal');
    page.on('request', (req) => {
      if (req.method() === 'POST' && /\/panel\/session\/(webauthn|passkey)\/verify$/.test(req.url())) lastAssertion = req.postDataJSON() as Json;
    });
  }, 180_000);

  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail' && page) {
      await page.screenshot({ path: join(SHOTS, `failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`), fullPage: true }).catch(() => undefined);
      console.log(`page at failure (${page.url()}):\n${await page.locator('body').innerText().catch(() => '?')}`);
      // A dialog left open by the failed test would make the page inert for every test after it.
      await page.keyboard.press('Escape').catch(() => undefined);
    }
  });

  afterAll(async () => {
    if (RECORD && Object.keys(recorded).length > 0) {
      mkdirSync(FIXTURES, { recursive: true });
      writeFileSync(join(FIXTURES, 'ceremonies.json'), `${JSON.stringify(recorded, null, 2)}\n`);
    }
    await chromium?.close();
    phishing?.closeAllConnections();
    await new Promise((r) => phishing?.close(r));
    await t?.close();
    await db?.drop();
  });

  it('registers a passkey from the Security page after a sign-in with the second factor, and audits it', async () => {
    await page.goto(`${origin}/panel/`);
    await password(page);
    await page.getByRole('textbox', { name: 'Code', exact: true }).fill(await nextCode());
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await go(page, origin, 'security');
    const options = page.waitForResponse((r) => r.url().endsWith('/panel/api/auth/mfa/passkeys/options'));
    const register = page.waitForRequest((r) => r.url().endsWith('/panel/api/auth/mfa/passkeys') && r.method() === 'POST');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByRole('dialog').getByLabel('Name').fill('laptop');
    await page.getByRole('button', { name: 'Create passkey' }).click();
    const row = page.getByTestId('passkey-row');
    await row.waitFor();
    expect(await row.innerText()).toMatch(/laptop[\s\S]*never[\s\S]*this device[\s\S]*bound to this authenticator/);
    expect(await page.getByTestId('passkey-count').textContent()).toBe('1');
    const stored = await t.ctx.db.selectFrom('admin_passkeys').selectAll().execute();
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ name: 'laptop', transports: 'internal', backed_up: 0, device_type: 'singleDevice' });
    // The browser's authenticator holds it as a discoverable credential for the RP ID localhost.
    const held = await credentials(auth);
    expect(held).toHaveLength(1);
    expect(held[0]).toMatchObject({ rpId: 'localhost', isResidentCredential: true });
    expect(Buffer.from(held[0]!.credentialId, 'base64').toString('base64url')).toBe(stored[0]!.credential_id);
    expect(await auditActions()).toContain('POST /auth/mfa/passkeys');
    // What the API lists: name, times, transports, backed up or bound.
    const list = await api('GET', '/auth/mfa/passkeys');
    expect(list.body.items).toEqual([expect.objectContaining({ name: 'laptop', last_used_at: null, transports: ['internal'], backed_up: false, device_type: 'single_device' })]);
    if (RECORD) {
      const opts = (await (await options).json()) as { options: { challenge: string } };
      recorded.registration = { origin, rpId: 'localhost', challenge: opts.options.challenge, response: ((await register).postDataJSON() as Json).credential };
    }
  }, 120_000);

  it('the passkey dialogs work from the keyboard alone and pass axe', async () => {
    await go(page, origin, 'security');
    const add = page.getByRole('button', { name: 'Add a passkey' });
    await add.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Add a passkey' });
    await dialog.waitFor();
    // The focus starts at the name (moved there by the dialog's effect, which may run after the dialog is drawn),
    // Tab stays in the dialog, Escape closes it and gives the focus back.
    await expect.poll(() => page.evaluate('document.activeElement.getAttribute("name")')).toBe('name');
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press('Tab');
      expect(await page.evaluate('!!document.activeElement.closest("[role=dialog]")')).toBe(true);
    }
    expect(await axe(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await expect.poll(() => page.evaluate('document.activeElement.textContent')).toBe('Add a passkey');
    // Rename by keyboard: open, type, Enter.
    await page.getByRole('button', { name: 'Rename laptop' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: 'Rename passkey' }).waitFor();
    expect(await axe(page)).toEqual([]);
    await page.keyboard.press('Control+A');
    await page.keyboard.type('work laptop');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByTestId('passkey-row').innerText()).toMatch(/^work laptop/);
    // The removal dialog: its own name, axe-clean; Escape keeps the passkey.
    await page.getByRole('button', { name: 'Remove work laptop' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: /Remove passkey/ }).waitFor();
    expect(await axe(page)).toEqual([]);
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    expect(await page.getByTestId('passkey-row').count()).toBe(1);
    await page.screenshot({ path: join(SHOTS, 'security-passkeys.png'), fullPage: true });
  }, 120_000);

  it('signs in with the passkey as the second factor', async () => {
    await signOut(page);
    await password(page);
    // The passkey is offered first; the codes stay choosable.
    await expect.poll(() => page.getByRole('radio', { name: 'Passkey' }).isChecked()).toBe(true);
    expect(await page.getByRole('radio', { name: 'Authenticator app (TOTP)' }).count()).toBe(1);
    expect(await axe(page)).toEqual([]);
    const before = await storedCounter();
    const options = page.waitForResponse((r) => r.url().endsWith('/panel/session/webauthn/options'));
    await page.getByRole('button', { name: 'Use passkey' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(await storedCounter()).toBeGreaterThan(before);
    const row = await t.ctx.db.selectFrom('admin_passkeys').select('last_used_at').executeTakeFirstOrThrow();
    expect(row.last_used_at).not.toBeNull();
    expect(lastAssertion).not.toBeNull();
    if (RECORD) {
      const opts = (await (await options).json()) as { options: { challenge: string } };
      recorded.authentication = { origin, rpId: 'localhost', challenge: opts.options.challenge, response: lastAssertion?.credential, counterBefore: before };
    }
  }, 60_000);

  it('refuses a replayed assertion: on its own challenge, and on a new one', async () => {
    const old = lastAssertion as { challenge_id: string; credential: Json };
    const counter = await storedCounter();
    // The challenge it answered is gone.
    expect((await sessionPost(page, '/webauthn/verify', old)).status).toBe(401);
    // A new sign-in challenge with a new WebAuthn challenge: the old assertion signed another one.
    const login = await sessionPost(page, '/login', { username: 'admin', password: ADMIN_PASSWORD });
    expect(login.body.methods).toContain('webauthn');
    expect((await sessionPost(page, '/webauthn/options', { challenge_id: login.body.challenge_id })).status).toBe(200);
    const replay = await sessionPost(page, '/webauthn/verify', { challenge_id: login.body.challenge_id, credential: old.credential });
    expect(replay).toMatchObject({ status: 401, body: { detail: 'The passkey was not accepted' } });
    expect(await storedCounter()).toBe(counter);
  }, 60_000);

  it('refuses the passkey on another origin serving the same panel', async () => {
    // A browser context of its own: cookies are not kept apart by port.
    const otherContext = await chromium.browser.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
    const other = await otherContext.newPage();
    const otherAuth = await withAuthenticator(other, 'internal');
    // The same credential in that browser's authenticator: the RP ID localhost fits both origins, so the browser signs.
    const [held] = await credentials(auth);
    await otherAuth.cdp.send('WebAuthn.addCredential', { authenticatorId: otherAuth.id, credential: { ...held!, signCount: held!.signCount + 100 } });
    await other.goto(`${phishingOrigin}/panel/`);
    try {
      await password(other);
      await other.getByRole('button', { name: 'Use passkey' }).click();
      await expect.poll(() => other.getByRole('alert').first().textContent(), { timeout: 20_000 }).toBe('The passkey was not accepted');
    } catch (err) {
      console.log(`the other origin's page (${other.url()}):\n${await other.locator('body').innerText().catch(() => '?')}`);
      throw err;
    }
    expect(await other.getByRole('button', { name: 'Sign out' }).count()).toBe(0);
    // The origin the browser signed was the other one: the service compared it with MAILSVC_PANEL_ORIGIN, not a header.
    expect(await credentials(otherAuth)).toEqual([expect.objectContaining({ signCount: held!.signCount + 101 })]);
    await otherContext.close();
    // A success clears the failures counted so far (the lockout has its own step below).
    await signOut(page);
    await password(page);
    await page.getByRole('button', { name: 'Use passkey' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  }, 60_000);

  it('refuses a cloned credential (its counter rolled back) and audits it', async () => {
    const [held] = await credentials(auth);
    const stored = await storedCounter();
    expect(held!.signCount).toBe(stored);
    // A copy of the key made earlier: same credential, an older counter.
    await auth.cdp.send('WebAuthn.removeCredential', { authenticatorId: auth.id, credentialId: held!.credentialId });
    await auth.cdp.send('WebAuthn.addCredential', { authenticatorId: auth.id, credential: { ...held!, signCount: Math.max(0, stored - 2) } });
    await signOut(page);
    await password(page);
    await page.getByRole('button', { name: 'Use passkey' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toBe('The passkey was not accepted');
    expect(await storedCounter()).toBe(stored);
    const clone = await t.ctx.db.selectFrom('audit_log').selectAll().where('action', '=', 'mfa.passkey_clone_suspected').execute();
    expect(clone).toHaveLength(1);
    expect(clone[0]).toMatchObject({ result: 'refused', source: '127.0.0.1' });
    expect(JSON.parse(String(clone[0]!.summary))).toMatchObject({ name: 'work laptop', stored_counter: stored, presented_counter: stored - 1 });
    // The genuine key (its counter ahead) signs in again.
    await auth.cdp.send('WebAuthn.removeCredential', { authenticatorId: auth.id, credentialId: held!.credentialId });
    await auth.cdp.send('WebAuthn.addCredential', { authenticatorId: auth.id, credential: { ...held!, signCount: stored + 10 } });
    await page.getByRole('button', { name: 'Start over' }).click();
    await password(page);
    await page.getByRole('button', { name: 'Use passkey' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  }, 60_000);

  it('with the panel policy, the panel refuses codes while the API still takes them', async () => {
    expect((await api('PATCH', '/auth/mfa/passkeys/policy', { required: 'panel' })).status).toBe(200);
    const login = await sessionPost(page, '/login', { username: 'admin', password: ADMIN_PASSWORD });
    expect(login.body.methods).toEqual(['webauthn']);
    const code = await nextCode();
    // A challenge of the API answered in the panel: refused there too.
    const apiChallenge = await t.app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'admin', password: ADMIN_PASSWORD } });
    expect(apiChallenge.json<Json>().methods).toEqual(['totp', 'webauthn', 'recovery']);
    const inPanel = await sessionPost(page, '/verify', { challenge_id: apiChallenge.json<Json>().challenge_id, method: 'totp', code });
    expect(inPanel.status).toBe(403);
    const viaApi = await t.app.inject({ method: 'POST', url: '/auth/mfa/verify', payload: { challenge_id: apiChallenge.json<Json>().challenge_id, method: 'totp', code } });
    expect(viaApi.statusCode).toBe(200);
    expect((await api('PATCH', '/auth/mfa/passkeys/policy', { required: 'no' })).status).toBe(200);
  }, 60_000);

  it('signs in without a password once passwordless is turned on', async () => {
    await go(page, origin, 'security');
    await page.getByLabel(/Sign in with a passkey alone/).check();
    await page.getByRole('button', { name: 'Save passkey settings' }).click();
    await expect.poll(async () => (await api('GET', '/auth/mfa/passkeys/policy')).body.passwordless).toBe(true);
    await signOut(page);
    const options = page.waitForResponse((r) => r.url().endsWith('/panel/session/passkey/options'));
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(await page.getByLabel('Password', { exact: true }).count()).toBe(0);
    if (RECORD) {
      const opts = (await (await options).json()) as { options: { challenge: string } };
      recorded.passwordless = { origin, rpId: 'localhost', challenge: opts.options.challenge, response: lastAssertion?.credential };
    }
  }, 60_000);

  it('counts failed assertions in the lockout shared with the API', async () => {
    const old = lastAssertion as { credential: Json };
    const apiLogin = () => t.app.inject({ method: 'POST', url: '/auth/login', remoteAddress: '127.0.0.1', payload: { username: 'admin', password: ADMIN_PASSWORD } });
    // Each a new sign-in challenge answered with an assertion that signed another challenge.
    for (let i = 0; i < FAIL_LIMIT; i++) {
      const login = await sessionPost(page, '/login', { username: 'admin', password: ADMIN_PASSWORD });
      expect(login.status, `login ${i + 1}`).toBe(200);
      expect((await sessionPost(page, '/webauthn/options', { challenge_id: login.body.challenge_id })).status).toBe(200);
      const r = await sessionPost(page, '/webauthn/verify', { challenge_id: login.body.challenge_id, credential: old.credential });
      expect(r.status, `assertion ${i + 1}`).toBe(401);
    }
    // The address is blocked for the API as for the panel, the right password included.
    expect((await apiLogin()).statusCode).toBe(429);
    expect((await sessionPost(page, '/login', { username: 'admin', password: ADMIN_PASSWORD })).status).toBe(429);
    expect((await sessionPost(page, '/passkey/options')).status).toBe(429);
    // The block ends by itself (MAILSVC_API_AUTH_BLOCK_SECONDS).
    await expect.poll(async () => (await apiLogin()).statusCode, { timeout: 30_000, interval: 500 }).toBe(200);
  }, 90_000);

  it('removes the passkey through its dialog', async () => {
    await go(page, origin, 'security');
    await page.getByRole('button', { name: 'Remove work laptop' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove', exact: true }).click();
    await expect.poll(() => page.getByTestId('passkey-row').count()).toBe(0);
    expect(await t.ctx.db.selectFrom('admin_passkeys').selectAll().execute()).toHaveLength(0);
    expect(await auditActions()).toContain('DELETE /auth/mfa/passkeys/:id');
    // The key the browser still holds no longer signs in, not even passwordless: the sign-in page no longer offers it.
    await signOut(page);
    expect(await page.getByRole('button', { name: 'Sign in with a passkey' }).count()).toBe(0);
    expect((await sessionPost(page, '/passkey/options')).status).toBe(403);
  }, 60_000);


  it('registers a USB security key and signs in with it', async () => {
    const keyContext = await chromium.browser.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
    try {
      const p = await keyContext.newPage();
      await withAuthenticator(p, 'usb');
      await p.goto(`${origin}/panel/`);
      await password(p);
      // No passkey left: TOTP is offered first.
      await p.getByRole('textbox', { name: 'Code', exact: true }).fill(await nextCode());
      await p.getByRole('button', { name: 'Verify' }).click();
      await p.getByRole('button', { name: 'Sign out' }).waitFor();
      await go(p, origin, 'security');
      await p.getByRole('button', { name: 'Add a passkey' }).click();
      await p.getByRole('dialog').getByLabel('Name').fill('security key');
      await p.getByRole('button', { name: 'Create passkey' }).click();
      await expect.poll(() => p.getByTestId('passkey-row').innerText()).toMatch(/security key[\s\S]*USB/);
      expect(await t.ctx.db.selectFrom('admin_passkeys').select(['name', 'transports']).execute()).toEqual([{ name: 'security key', transports: 'usb' }]);
      await signOut(p);
      await password(p);
      await p.getByRole('button', { name: 'Use passkey' }).click();
      await p.getByRole('button', { name: 'Sign out' }).waitFor();
    } finally {
      await keyContext.close();
    }
  }, 90_000);
});
