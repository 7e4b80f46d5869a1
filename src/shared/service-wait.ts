import { existsSync } from 'node:fs';

/** The URL of the API's /health on the address the service listens on (an IPv6 host in brackets). */
export function healthUrl(apiHost: string, apiPort: number): string {
  return `http://${apiHost.includes(':') ? `[${apiHost}]` : apiHost}:${apiPort}/health`;
}

/**
 * Until `url` answers 200 and `keyFile` (the key the service makes on its first start) exists, up to
 * `limitMs`: null when both are there, else what the administrator should look at.
 */
export async function waitForService(url: string, keyFile: string | null = null, limitMs = 90_000): Promise<string | null> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const answers = await fetch(url, { signal: AbortSignal.timeout(5_000) }).then((r) => r.ok, () => false);
    if (answers && (keyFile === null || existsSync(keyFile))) return null;
    if (Date.now() > deadline) return `the service did not answer at ${url} within ${limitMs / 1000} s: systemctl status mailsvc; journalctl -u mailsvc`;
    await new Promise((r) => setTimeout(r, 250));
  }
}
