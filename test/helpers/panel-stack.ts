import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import type { Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import type { Browser, BrowserContext } from 'playwright-core';
import { CLI_BIN, REPO_ROOT } from './cli.js';
import { findProgram } from './mail-daemons.js';
import { skipNotice } from './services.js';
import { prepareRspamd } from './rspamd.js';
import { startTestApp } from './app.js';
import type { TestApp } from './app.js';

const execFileP = promisify(execFile);
export const CHROMIUM = '/usr/bin/chromium';
/** Debian's chromium, quiet: it never calls home, updates itself or syncs. */
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic', '--disable-gpu'];

/** Why the browser tests cannot run here, or null (prints the skip notice). */
export function panelBrowserUnavailable(): string | null {
  let why: string | null = null;
  if (!existsSync(CHROMIUM)) why = `${CHROMIUM} is missing (Debian package chromium)`;
  else if (process.getuid?.() !== 0) why = 'not root (the firewall part runs the helper in a network namespace)';
  else if (!findProgram('ip') || !findProgram('nft')) why = 'ip or nft is missing';
  if (why) skipNotice('the web panel in Chromium', why);
  return why;
}

/** Headless Chromium with a fresh profile; never a downloaded browser. */
export async function launchChromium(): Promise<{ browser: Browser; close(): Promise<void> }> {
  // launch() gives each run a fresh, temporary user-data-dir of its own (and removes it on close).
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  return { browser, close: () => browser.close() };
}

export async function newContext(browser: Browser, width = 1280): Promise<BrowserContext> {
  return browser.newContext({ ignoreHTTPSErrors: true, viewport: { width, height: 900 }, serviceWorkers: 'block' });
}

export type PanelStack = {
  t: TestApp;
  /** https://127.0.0.1:<port>: the TLS front, as nginx would be. */
  origin: string;
  /** http://localhost:<port>: another site, for the cross-site post. */
  otherSite: string;
  /** The namespace the privileged helper (and so nft) runs in. */
  ns: string;
  close(): Promise<void>;
};

/**
 * The real service on 127.0.0.1 behind a TLS front that forwards like nginx
 * (Host kept, X-Forwarded-For set), with the privileged helper in a network
 * namespace of its own, so a firewall change never touches this machine's
 * ruleset. `env` adds settings (the Postfix queue, limits …).
 */
export async function startPanelStack(databaseUrl: string, env: Record<string, string> = {}): Promise<PanelStack> {
  const ns = `msvc-p-${randomBytes(3).toString('hex')}`;
  await execFileP('ip', ['netns', 'add', ns]);
  await execFileP('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  const run = mkdtempSync(join(tmpdir(), 'mailsvc-panel-'));
  mkdirSync(run, { recursive: true });
  const sock = join(run, 'helper.sock');
  // Every place the helper writes is a private copy: left to its defaults it would write the machine's
  // /etc/rspamd (DKIM keys and dkim_signing.conf), /etc/default/postsrsd and /etc/fail2ban.
  const rspamd = await prepareRspamd(run, '127.0.0.1:53');
  const fail2banDir = join(run, 'fail2ban');
  mkdirSync(join(fail2banDir, 'jail.d'), { recursive: true });
  const daemonPlaces = {
    MAILSVC_RSPAMD_LOCAL_DIR: rspamd.localDir,
    MAILSVC_POSTSRSD_DEFAULTS: join(run, 'postsrsd.defaults'),
    MAILSVC_FAIL2BAN_CONFIG_DIR: fail2banDir,
  };
  const helper: ChildProcess = spawn('ip', ['netns', 'exec', ns, process.execPath, CLI_BIN, 'helper', 'serve'], {
    // The helper reads the daemons' places from its own environment: the private copies above, or the
    // test's own (the Postfix queue's config dir, a private fail2ban's socket and config, the Rspamd directory whose dkim/ and local.d/ the DKIM actions write).
    env: { PATH: process.env.PATH ?? '', MAILSVC_HELPER: `unix:${sock}`, MAILSVC_DATA_DIR: run, ...daemonPlaces, ...Object.fromEntries(Object.entries(env).filter(([k]) => k === 'MAILSVC_POSTFIX_CONFIG_DIR' || k === 'MAILSVC_FAIL2BAN_SOCKET' || k in daemonPlaces)) },
    stdio: 'ignore',
  });
  for (let i = 0; i < 100 && !existsSync(sock); i += 1) await new Promise((r) => setTimeout(r, 100));
  const t = await startTestApp(databaseUrl, { MAILSVC_ENABLE_WEB_PANEL: 'yes', MAILSVC_TRUSTED_PROXIES: '127.0.0.1', MAILSVC_HELPER: `unix:${sock}`, ...daemonPlaces, ...env });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const apiPort = (t.app.server.address() as AddressInfo).port;

  const tls = join(REPO_ROOT, 'test/fixtures/tls');
  const front = createHttpsServer({ key: readFileSync(join(tls, 'server-key.pem')), cert: readFileSync(join(tls, 'server-cert.pem')) }, (req, res) => {
    const headers = { ...req.headers, 'x-forwarded-for': req.socket.remoteAddress ?? '127.0.0.1', 'x-forwarded-proto': 'https' };
    const up = httpRequest({ host: '127.0.0.1', port: apiPort, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => (res.writeHead(502), res.end()));
    req.pipe(up);
  });
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  // Another site's page: it tries a form post to the panel.
  const other: Server = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>other site</title><p>nothing here</p>');
  });
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
  return {
    t,
    ns,
    origin: `https://127.0.0.1:${(front.address() as AddressInfo).port}`,
    otherSite: `http://localhost:${(other.address() as AddressInfo).port}`,
    async close() {
      front.closeAllConnections();
      other.closeAllConnections();
      await new Promise((r) => front.close(r));
      await new Promise((r) => other.close(r));
      await t.close();
      helper.kill();
      await execFileP('ip', ['netns', 'del', ns]).catch(() => undefined);
      rmSync(run, { recursive: true, force: true });
    },
  };
}
