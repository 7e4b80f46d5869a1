import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';

/** SSH and 8080 open to everyone; the HTTPS port nginx serves the panel on only to an office network. */
const RULES = [
  { ports: 'ssh 8080', protocol: 'tcp', source: '', enabled: 'yes' },
  { ports: '443', protocol: 'tcp', source: '10.0.0.0/8', enabled: 'yes' },
];

/**
 * The lockout guard behind nginx: the administrator's real address comes from
 * a trusted proxy's X-Forwarded-For, and the port to keep open is the one the
 * proxy served the request on, not the API's own; a request forwarded by a
 * proxy on loopback that is not trusted hides who asks, and is refused.
 * Every case here is a refusal, decided before the helper is asked.
 */
describe('the firewall guard protects the administrator behind a proxy', () => {
  let db: TestDatabase;
  let trusted: TestApp;
  let plain: TestApp;
  const put = (t: TestApp, headers: Record<string, string>) =>
    t.app.inject({ method: 'PUT', url: '/admin/firewall', remoteAddress: '127.0.0.1', headers: { authorization: t.basic(), ...headers }, payload: { 'firewall-enabled': 'yes', 'firewall-rules-json': RULES } });

  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    trusted = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_TRUSTED_PROXIES: '127.0.0.1/32', MAILSVC_HELPER: 'unix:/nonexistent/helper.sock' });
    plain = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_HELPER: 'unix:/nonexistent/helper.sock' });
  }, 60_000);
  afterAll(async () => {
    await trusted?.close();
    await plain?.close();
    await db?.drop();
  });

  it('through a trusted proxy: the forwarded address and the proxy\'s port (443) are protected, and the refusal says which rule opens it to whom', async () => {
    const r = await put(trusted, { 'x-forwarded-for': '203.0.113.9', 'x-forwarded-proto': 'https' });
    expect(r.statusCode, r.body).toBe(409);
    expect(r.json<{ detail: string }>().detail).toBe(
      'this ruleset closes the panel and API through the proxy (443/tcp) to 203.0.113.9, the address you are calling from (443/tcp: only rule 2 (from 10.0.0.0/8) opens it, not to this address); ' +
        'nothing changed. Add an accept rule for it, or force it (--force / force=true) and confirm within 120 s',
    );
  });

  it('X-Forwarded-Port names the port the proxy listens on', async () => {
    const r = await put(trusted, { 'x-forwarded-for': '203.0.113.9', 'x-forwarded-port': '8443' });
    expect(r.statusCode).toBe(409);
    expect(r.json<{ detail: string }>().detail).toMatch(/closes the panel and API through the proxy \(8443\/tcp\) to 203\.0\.113\.9, .*8443\/tcp: no enabled rule opens it/);
  });

  it('a proxy on loopback that MAILSVC_TRUSTED_PROXIES does not name hides the address: refused, saying what to set', async () => {
    const r = await put(plain, { 'x-forwarded-for': '203.0.113.9' });
    expect(r.statusCode).toBe(409);
    expect(r.json<{ detail: string }>().detail).toMatch(/through a proxy on loopback .* MAILSVC_TRUSTED_PROXIES does not name.*Add the proxy to MAILSVC_TRUSTED_PROXIES/);
  });

  it('a trusted proxy forwarding a loopback client (the panel in front of its own API) is let through: a loopback caller cannot be cut off', async () => {
    const r = await put(trusted, { 'x-forwarded-for': '127.0.0.1', 'x-forwarded-proto': 'https' });
    expect(r.statusCode, r.body).toBe(503);
  });

  it('an address the office rule covers is let through to the helper (here unreachable: 503, not 409)', async () => {
    const r = await put(trusted, { 'x-forwarded-for': '10.1.2.3' });
    expect(r.statusCode, r.body).toBe(503);
  });
});
