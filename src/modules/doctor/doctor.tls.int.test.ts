import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:tls';
import type { Server } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCli, runCli } from '../../../test/helpers/cli.js';
import { freePort } from '../../../test/helpers/mail-daemons.js';
import { startTlsPostfix } from '../../../test/helpers/postfix-tls.js';
import type { TlsPostfix } from '../../../test/helpers/postfix-tls.js';
import { queuePostfixUnavailable } from '../../../test/helpers/postfix-queue.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { makeTestCa } from '../../../test/helpers/test-ca.js';
import type { TestCa } from '../../../test/helpers/test-ca.js';
import type { DoctorReport } from './schema.js';

/**
 * The certificate checks against local TLS servers on free ports (the ports
 * made configurable with MAILSVC_DOCTOR_TLS_PORTS), certificates from a test
 * CA the CLI trusts (NODE_EXTRA_CA_CERTS), and STARTTLS on a real Postfix.
 */
const HOST = 'mail.doctor.test';
const noPostfix = queuePostfixUnavailable();
if (noPostfix) skipNotice('Postfix (STARTTLS on port "25")', noPostfix);

describe('mailsvc doctor: certificates', () => {
  let dir: string;
  const cas: TestCa[] = [];
  const servers: Server[] = [];
  let pf: TlsPostfix | undefined;
  const ports: Record<string, number> = {};

  const serve = async (ca: TestCa): Promise<number> => {
    const s = createServer({ key: ca.key, cert: ca.cert + ca.ca }, (sock) => sock.end());
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    servers.push(s);
    return (s.address() as { port: number }).port;
  };

  beforeAll(async () => {
    buildCli();
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-doctor-tls-'));
    const good = makeTestCa([HOST], { days: 90 });
    const soon = makeTestCa([HOST], { days: 5 });
    const expired = makeTestCa([HOST], { days: -1 });
    cas.push(good, soon, expired);
    writeFileSync(join(dir, 'cas.pem'), cas.map((c) => c.ca).join(''));
    ports.good = await serve(good);
    ports.soon = await serve(soon);
    ports.expired = await serve(expired);
    ports.none = await freePort();
    if (!noPostfix) pf = await startTlsPostfix(good.chain, good.key, HOST);
    expect((await runCli(['db', 'migrate'], { env: { MAILSVC_DATA_DIR: dir } })).code).toBe(0);
  }, 120_000);
  afterAll(async () => {
    for (const s of servers) await new Promise((r) => s.close(r));
    await pf?.stop();
    for (const c of cas) c.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('valid: ok; expiring in 5 days: warn; expired: fail; nothing served: fail; STARTTLS on a real Postfix: ok', async () => {
    const list = [`imaps:${ports.good}`, `pop3s:${ports.soon}`, `https:${ports.expired}`, `smtps:${ports.none}`, ...(pf ? [`smtp:${pf.port}`] : [])].join(',');
    const out = await runCli(['doctor', '--json'], {
      env: { MAILSVC_DATA_DIR: dir, MAILSVC_HELPER: 'direct', MAILSVC_DOCTOR_TLS_PORTS: list, MAILSVC_DOCTOR_TLS_NAME: HOST, NODE_EXTRA_CA_CERTS: join(dir, 'cas.pem') },
      timeoutMs: 90_000,
    });
    const r = JSON.parse(out.stdout) as DoctorReport;
    const line = (id: string) => r.checks.find((c) => c.id === id);
    expect(line('tls.imaps')).toMatchObject({ status: 'ok', detail: expect.stringMatching(new RegExp(`^${HOST} on 127\\.0\\.0\\.1:${ports.good}, valid until \\d{4}-\\d\\d-\\d\\d \\((89|90) days\\)$`)), fix: null });
    expect(line('tls.pop3s')).toMatchObject({ status: 'warn', detail: expect.stringMatching(/expires in [45] days/), fix: 'renew the certificate (certbot renew) and reload Dovecot' });
    expect(line('tls.https')).toMatchObject({ status: 'fail', detail: expect.stringMatching(/expired on \d{4}-\d\d-\d\d$/), fix: 'renew the certificate (certbot renew) and reload nginx' });
    expect(line('tls.smtps')).toMatchObject({ status: 'fail', detail: `nothing is served on 127.0.0.1:${ports.none}` });
    if (pf) expect(line('tls.smtp')).toMatchObject({ status: 'ok', detail: expect.stringMatching(new RegExp(`^${HOST} on 127\\.0\\.0\\.1:${pf.port}, valid until`)) });
    expect(out.code).toBe(1);
  }, 120_000);

  it('a certificate the client does not trust is warn, naming why', async () => {
    const out = await runCli(['doctor', '--json'], {
      env: { MAILSVC_DATA_DIR: dir, MAILSVC_HELPER: 'direct', MAILSVC_DOCTOR_TLS_PORTS: `imaps:${ports.good}`, MAILSVC_DOCTOR_TLS_NAME: HOST },
      timeoutMs: 90_000,
    });
    const r = JSON.parse(out.stdout) as DoctorReport;
    expect(r.checks.find((c) => c.id === 'tls.imaps')).toMatchObject({ status: 'warn', detail: expect.stringMatching(/is not trusted for mail\.doctor\.test: /) });
  }, 120_000);
});
