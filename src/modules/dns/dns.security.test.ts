import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { startFakeCloudflare } from '../../../test/helpers/cloudflare-server.js';
import type { FakeCloudflare } from '../../../test/helpers/cloudflare-server.js';
import { testCaTrustProblem } from '../../../test/helpers/fake-sms-provider.js';
import { sealedValues } from '../../../test/helpers/cli.js';
import { startHelperProcess } from '../../../test/helpers/helper-process.js';
import type { HelperProcess } from '../../../test/helpers/helper-process.js';
import { skipNotice } from '../../../test/helpers/services.js';

/**
 * The secrets of the dns module never leave: the Cloudflare token and the DKIM
 * private keys are not in any answer, log line, audit record or error message,
 * and are stored only sealed. Through the HTTP API as `mailsvc serve` builds it,
 * against the local Cloudflare API v4 server (test/fixtures/tls certificate).
 */
const tls = fileURLToPath(new URL('../../../test/fixtures/tls/', import.meta.url));
const why = testCaTrustProblem();
if (why) skipNotice('the test CA', why);

const TOKEN = 'cf-secret-token-do-not-leak-7f3a9c';
const ZONE = { id: 'abc123', name: 'example.test', token: TOKEN };

describe.skipIf(why !== null)('dns secrets never leave (API, logs, audit)', () => {
  let t: TestApp;
  let cf: FakeCloudflare;
  let dir: string;
  let helper: HelperProcess;
  const req = (method: 'GET' | 'PUT' | 'POST', url: string, payload?: unknown) =>
    t.app.inject({ method, url, headers: { authorization: t.basic(), ...(payload === undefined ? {} : { 'content-type': 'application/json' }) }, ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }) });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-dns-sec-'));
    // The API reaches the root helper over its socket, as the service does: the DKIM key travels to it.
    helper = await startHelperProcess({ env: { MAILSVC_RSPAMD_LOCAL_DIR: join(dir, 'none/local.d') } });
    cf = await startFakeCloudflare({ cert: readFileSync(join(tls, 'server-cert.pem'), 'utf8'), key: readFileSync(join(tls, 'server-key.pem'), 'utf8') }, ZONE);
    t = await startTestApp(`sqlite://${join(dir, 'db.sqlite')}`, {
      MAILSVC_MFA_REQUIRED: 'no',
      MAILSVC_CLOUDFLARE_API_URL: cf.baseUrl,
      MAILSVC_OUTBOUND_ALLOW_HOSTS: `127.0.0.1:${cf.port}`,
      MAILSVC_RSPAMD_LOCAL_DIR: join(dir, 'none/local.d'),
      MAILSVC_HELPER: `unix:${helper.socket}`,
    });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await cf?.close();
    await helper?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('POST /domains {generate_dkim} answers the public record, never the private key; the key is stored sealed', async () => {
    const r = await req('POST', '/domains', { name: 'example.test', generate_dkim: true });
    expect(r.statusCode, r.body).toBe(201);
    const body = r.json<{ dkim: { keys: { record_value: string }[] } }>();
    expect(body.dkim.keys[0]?.record_value).toMatch(/^v=DKIM1; k=rsa; p=MII/);
    expect(r.body).not.toMatch(/PRIVATE KEY|private_key/);
    const sealed = (await sealedValues(t.ctx.db)).filter((s) => s.table === 'dkim_keys');
    expect(sealed.length).toBe(1);
    expect(sealed[0]?.value).toMatch(/^v1\./);
    expect((await req('POST', '/domains/example.test/dkim', {})).body).not.toMatch(/PRIVATE KEY/);
    // The helper got the key (dkim-key-install) and logged it only as [redacted].
    const installs = helper.logs().map((l) => l.helper as { action?: string; args?: string[] } | undefined).filter((h) => h?.action === 'dkim-key-install');
    expect(installs.length).toBeGreaterThan(0);
    for (const h of installs) expect(h?.args?.[3]).toBe('[redacted]');
    for (const text of [JSON.stringify(helper.logs()), t.logs.join('\n')]) expect(text).not.toMatch(/PRIVATE KEY|MII[A-Za-z0-9+/]{200}/);
  });

  it('a refused token is 400 and its message does not carry the token', async () => {
    const r = await req('PUT', '/domains/example.test/dns-sync', { zone_id: ZONE.id, api_token: `${TOKEN}-wrong` });
    expect(r.statusCode).toBe(400);
    expect(r.body).toMatch(/refused the token/);
    expect(r.body).not.toContain(TOKEN);
  });

  it('PUT /dns-sync stores the token sealed; no answer, log line or audit record holds it', async () => {
    const put = await req('PUT', '/domains/example.test/dns-sync', { zone_id: ZONE.id, api_token: TOKEN, enabled: true });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json()).toMatchObject({ zone_id: ZONE.id, api_token_set: true, enabled: true });
    const get = await req('GET', '/domains/example.test/dns-sync');
    const run = await req('POST', '/domains/example.test/dns-sync/run', { dry_run: false });
    expect(run.statusCode, run.body).toBe(200);
    const audit = await req('GET', '/admin/audit?limit=100');
    for (const body of [put.body, get.body, run.body, audit.body, t.logs.join('\n')]) expect(body).not.toContain(TOKEN);
    expect(audit.body).toContain('dns-sync');
    const sealed = (await sealedValues(t.ctx.db)).filter((s) => s.table === 'dns_sync');
    expect(sealed).toHaveLength(1);
    expect(sealed[0]?.value).not.toContain(TOKEN);
    // The token did reach Cloudflare: the sync wrote the records (the key, and the one the rotation started above made).
    expect(cf.records.length).toBe(2);
    for (const x of cf.records) expect(x.name).toMatch(/\._domainkey\.example\.test$/);
  });

  it('the plan and deliverability routes are behind admin authentication', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/domains/example.test/dns-plan?mail_host=mail.example.test' })).statusCode).toBe(401);
    const ok = await req('GET', '/domains/example.test/dns-plan?mail_host=mail.example.test');
    expect(ok.statusCode).toBe(200);
    expect((await req('GET', '/domains/example.test/dns-plan?mail_host=mail.example.test&public_ip=999.1.1.1')).statusCode).toBe(400);
    expect((await req('GET', '/domains/example.test/deliverability')).statusCode).toBe(404);
  });
});
