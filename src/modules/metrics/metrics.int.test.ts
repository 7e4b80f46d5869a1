import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { call } from '../../../test/helpers/flows.js';
import { queuePostfixUnavailable, startQueuePostfix } from '../../../test/helpers/postfix-queue.js';
import type { QueuePostfix } from '../../../test/helpers/postfix-queue.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { findProgram } from '../../../test/helpers/mail-daemons.js';

/**
 * GET /metrics on the service as `mailsvc serve` builds it, over a real
 * Postfix queue, the real mail-auth hook and policy sockets; the text is
 * checked by Prometheus's own parser (`promtool check metrics`).
 */

const unavailable = queuePostfixUnavailable() ?? (findProgram('promtool') ? null : 'promtool (package prometheus) missing');
if (unavailable) skipNotice('Postfix (postqueue, root) and promtool', unavailable);

const TOKEN = 'scrape-token-0123456789abcdef';

/** One request line on a socket, resolved with the first answer. */
function ask(port: number, text: string, until: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(text));
    let got = '';
    s.setEncoding('utf8').on('data', (d: string) => {
      got += d;
      if (got.includes(until)) {
        s.end();
        resolve(got);
      }
    });
    s.on('error', reject);
  });
}

/** `name{labels} value` lines of the exposition as a lookup by the whole series text. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(\S+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m && !line.startsWith('#')) out.set(m[1] ?? '', Number(m[2]));
  }
  return out;
}

describe.skipIf(unavailable !== null)('GET /metrics', () => {
  let pf: QueuePostfix;
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    pf = await startQueuePostfix();
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_HELPER: 'direct', MAILSVC_POSTFIX_CONFIG_DIR: pf.configDir, MAILSVC_METRICS_TOKEN: TOKEN });
    await pf.send([{ from: 'a@one.test', to: ['r1@x.test'] }, { from: 'b@two.test', to: ['r2@y.test'] }]);
    await pf.settle(2);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await pf?.stop();
  });

  const scrape = async (auth: string) => t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: auth } });

  it('is never public: no credentials or a wrong token is 401; the scrape token or the administrator reads it', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    expect((await scrape(`Bearer ${TOKEN}x`)).statusCode).toBe(401);
    expect((await scrape(`Bearer ${TOKEN.slice(0, -1)}`)).statusCode).toBe(401);
    const byToken = await scrape(`Bearer ${TOKEN}`);
    expect(byToken.statusCode).toBe(200);
    expect(byToken.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect((await scrape(t.basic())).statusCode).toBe(200);
  });

  it('counts requests by route template and status with latency, auth failures and 429 blocks, hook and policy decisions, and the queue per queue; promtool parses it', async () => {
    for (let i = 0; i < 3; i++) expect((await call(t, 'GET', '/stats/summary', t.basic())).status).toBe(200);
    expect((await call(t, 'GET', '/stats/summary', t.basic('admin', 'wrong'))).status).toBe(401);
    // The mail-auth hook on TCP: an unknown user is a "fail" decision.
    const mailAuth = await t.ctx.modules.get('mail-auth');
    const hook = await mailAuth.startHookServer({ tcp: { host: '127.0.0.1', port: 0 } });
    const hookPort = (hook.servers[0]?.address() as { port: number }).port;
    const hex = (s: string) => Buffer.from(s).toString('hex');
    expect(await ask(hookPort, `AUTH\timap\t192.0.2.1\t${hex('nobody@example.org')}\t${hex('pw')}\n`, '\n')).toBe('FAIL\n');
    await hook.close();
    // The policy service: a request without a SASL user is DUNNO.
    const sendLimits = await t.ctx.modules.get('send-limits');
    const policy = await sendLimits.startPolicyServer({ host: '127.0.0.1', port: 0 });
    expect(await ask(policy.port, 'request=smtpd_access_policy\nprotocol_state=END-OF-MESSAGE\nsender=a@x.test\n\n', '\n\n')).toBe('action=DUNNO\n\n');
    await policy.close();

    const res = await scrape(`Bearer ${TOKEN}`);
    const check = spawnSync('promtool', ['check', 'metrics'], { input: res.body, encoding: 'utf8' });
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    const s = samples(res.body);
    expect(s.get('mailsvc_http_request_duration_seconds_count{route="/stats/summary",method="GET",status="200"}')).toBe(3);
    expect(s.get('mailsvc_http_request_duration_seconds_count{route="/stats/summary",method="GET",status="401"}')).toBe(1);
    expect(s.get('mailsvc_auth_failures_total')).toBeGreaterThanOrEqual(1);
    expect(s.get('mailsvc_mail_auth_hook_duration_seconds_count{result="fail"}')).toBe(1);
    expect(s.get('mailsvc_policy_duration_seconds_count{action="DUNNO"}')).toBe(1);
    const queued = await pf.queue();
    for (const q of ['active', 'deferred', 'hold', 'incoming']) {
      expect(s.get(`mailsvc_queue_messages{queue="${q}"}`), q).toBe(queued.filter((m) => m.queue_name === q).length);
    }
    expect(queued.length).toBe(2);
  });

  it('answers 429 to a blocked address and counts the block', async () => {
    let status = 0;
    for (let i = 0; i < 12 && status !== 429; i++) status = (await t.app.inject({ method: 'GET', url: '/stats/summary', headers: { authorization: t.basic('admin', 'wrong') }, remoteAddress: '192.0.2.77' })).statusCode;
    expect(status).toBe(429);
    const s = samples((await scrape(`Bearer ${TOKEN}`)).body);
    expect(s.get('mailsvc_auth_blocked_total{route="/stats/summary"}')).toBeGreaterThanOrEqual(1);
  });
});
