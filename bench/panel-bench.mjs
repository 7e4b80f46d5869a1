// Web panel benchmark (part of npm run bench; alone: npm run build && node bench/panel-bench.mjs).
/* global fetch, setTimeout */
//
// The built service (dist/bundle/mailsvc.js serve) with the panel on, on 127.0.0.1 with a port picked
// at run time, SQLite in a temp dir; Debian's chromium, headless, through playwright-core (no browser
// download). Two figures, each against the target:
// - first load: the bytes on the wire (compressed bodies + headers) of everything /panel/ loads before
//   sign-in, in a fresh browser context (empty cache); target < 150 KB;
// - dashboard time to interactive: a signed-in fresh context opens /panel/#/dashboard; from navigation
//   start until the dashboard shows the health status read from the API (the page is usable then);
//   median of RUNS; target < 500 ms.
// - passkey sign-in end to end: on http://localhost (WebAuthn's RP ID cannot be an address), with the
//   DevTools virtual authenticator holding a registered passkey: from opening the sign-in page, through
//   the password, the challenge and the passkey ceremony, until the signed-in panel shows; median of RUNS.
// Exit 1 only when the bench itself failed; MISS is reported, not fatal.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist/bundle/mailsvc.js');
const RUNS = Number(process.env.PANEL_BENCH_RUNS ?? 15);
const ARGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic', '--disable-gpu'];
const log = (s) => process.stderr.write(`${s}\n`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function waitUp(base, child) {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`mailsvc serve exited ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('mailsvc serve did not answer /health within 30 s');
}

const dir = mkdtempSync(join(tmpdir(), 'mailsvc-panel-bench-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const env = {
  PATH: process.env.PATH ?? '',
  MAILSVC_DATA_DIR: dir,
  MAILSVC_API_HOST: '127.0.0.1',
  MAILSVC_API_PORT: String(port),
  MAILSVC_ADMIN_PASSWORD: 'bench password, not a secret',
  // Password alone signs in (no second factor to script) and the plain-HTTP cookie on loopback.
  MAILSVC_MFA_REQUIRED: 'no',
  MAILSVC_ENABLE_WEB_PANEL: 'yes',
  MAILSVC_PANEL_DEV_HTTP: 'yes',
  MAILSVC_LOG_LEVEL: 'warn',
  MAILSVC_HELPER: 'direct',
  MAILSVC_PANEL_ORIGIN: `http://localhost:${port}`,
};
const service = spawn(process.execPath, [CLI, 'serve'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
let browser;
let failed = false;
try {
  await waitUp(base, service);
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ARGS });

  // First load, cold cache.
  const cold = await browser.newContext();
  const page = await cold.newPage();
  const sizes = [];
  page.on('requestfinished', (req) => sizes.push(req.sizes().then((s) => ({ url: req.url(), bytes: s.responseBodySize + s.responseHeadersSize }))));
  await page.goto(`${base}/panel/`, { waitUntil: 'networkidle' });
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  const loaded = await Promise.all(sizes);
  const firstLoad = loaded.reduce((n, r) => n + r.bytes, 0);
  for (const r of loaded) log(`  ${r.url.replace(base, '')}: ${r.bytes} B`);

  // Sign in once; each run opens the dashboard in a fresh context holding that session's cookie.
  await page.getByLabel('Password').fill(env.MAILSVC_ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('health-status').waitFor();
  const cookies = await cold.cookies();
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const ctx = await browser.newContext();
    await ctx.addCookies(cookies);
    const p = await ctx.newPage();
    const started = performance.now();
    await p.goto(`${base}/panel/#/dashboard`, { waitUntil: 'commit' });
    await p.getByTestId('health-status').waitFor();
    times.push(performance.now() - started);
    await ctx.close();
  }
  const tti = median(times);
  const kb = firstLoad / 1024;
  log(`panel first load: ${kb.toFixed(1)} KB on the wire (target < 150 KB, ratio ${(kb / 150).toFixed(2)}) ${kb < 150 ? 'OK' : 'MISS'}`);
  log(`panel dashboard time to interactive: median ${tti.toFixed(0)} ms of ${RUNS} (min ${Math.min(...times).toFixed(0)}, max ${Math.max(...times).toFixed(0)}; target < 500 ms, ratio ${(tti / 500).toFixed(2)}) ${tti < 500 ? 'OK' : 'MISS'}`);

  // Passkey sign-in: register one (the password-only session may, before any factor is enrolled), then time sign-ins.
  const local = `http://localhost:${port}`;
  const pk = await browser.newContext();
  const pp = await pk.newPage();
  const cdp = await pk.newCDPSession(pp);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  await cdp.send('WebAuthn.addVirtualAuthenticator', { options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true } });
  await pp.goto(`${local}/panel/`);
  await pp.getByLabel('Password').fill(env.MAILSVC_ADMIN_PASSWORD);
  await pp.getByRole('button', { name: 'Sign in' }).click();
  await pp.getByRole('button', { name: 'Sign out' }).waitFor();
  await pp.goto(`${local}/panel/#/security`);
  await pp.getByRole('button', { name: 'Add a passkey' }).click();
  await pp.getByRole('dialog').getByLabel('Name').fill('bench');
  await pp.getByRole('button', { name: 'Create passkey' }).click();
  // Enrolling the passkey ends the password-only session: the sign-in page comes back.
  await pp.getByRole('heading', { name: 'Sign in to mailsvc' }).waitFor({ timeout: 30_000 });
  const signIns = [];
  for (let i = 0; i < RUNS; i++) {
    await pk.clearCookies();
    const started = performance.now();
    await pp.goto(`${local}/panel/`);
    await pp.getByLabel('Password').fill(env.MAILSVC_ADMIN_PASSWORD);
    await pp.getByRole('button', { name: 'Sign in' }).click();
    await pp.getByRole('button', { name: 'Use passkey' }).click();
    await pp.getByRole('button', { name: 'Sign out' }).waitFor();
    signIns.push(performance.now() - started);
  }
  await pk.close();
  log(`panel passkey sign-in end to end (page, password, passkey): median ${median(signIns).toFixed(0)} ms of ${RUNS} (min ${Math.min(...signIns).toFixed(0)}, max ${Math.max(...signIns).toFixed(0)})`);
} catch (err) {
  failed = true;
  log(`panel bench failed: ${err instanceof Error ? err.stack : String(err)}`);
} finally {
  await browser?.close();
  service.kill();
  await new Promise((r) => service.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
