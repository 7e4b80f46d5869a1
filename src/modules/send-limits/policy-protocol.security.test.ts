import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createConnection } from 'node:net';
import type { Socket } from 'node:net';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { loadMailSettings } from '../../config/mail-settings.js';
import { startPolicyServer } from './policy-server.js';
import type { PolicyServer } from './policy-server.js';

/** Writes `text` and collects what comes back until the server closes or `ms` pass. */
function exchange(connect: () => Socket, text: string, ms = 1500): Promise<{ data: string; closed: boolean }> {
  return new Promise((resolve) => {
    const c = connect();
    let data = '';
    const timer = setTimeout(() => {
      c.destroy();
      resolve({ data, closed: false });
    }, ms);
    c.on('data', (d) => (data += d.toString()));
    c.on('error', () => undefined);
    c.on('close', () => {
      clearTimeout(timer);
      resolve({ data, closed: true });
    });
    c.write(text);
  });
}

const req = (attrs: Record<string, string>): string => `${Object.entries(attrs).map(([k, v]) => `${k}=${v}`).join('\n')}\n\n`;
const USER = 'fast@example.org';
// Postfix's group where Postfix is installed; on a machine without it, another group every Debian has.
const SOCKET_GROUP = readFileSync('/etc/group', 'utf8').split('\n').some((l) => l.startsWith('postfix:')) ? 'postfix' : 'daemon';
const valid = req({ request: 'smtpd_access_policy', protocol_state: 'END-OF-MESSAGE', sasl_username: USER });

/**
 * Any local process can reach a loopback port. What is not a Postfix SMTPD
 * access policy request gets no answer (Postfix's protocol: on trouble, no
 * reply, log, disconnect): it can neither spend an account's quota nor read
 * its limit. The Unix socket option keeps everyone but Postfix out.
 */
describe('policy service: only Postfix policy requests are answered', () => {
  let db: TestDatabase;
  let t: TestApp;
  let server: PolicyServer | undefined;
  beforeEach(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
    await t.ctx.domains.create('example.org');
    await t.ctx.accounts.create({ address: USER, password: 'long-enough-pw', send_rate_per_minute: 2 });
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    await t?.close();
    await db?.drop();
  });

  it('a request without request=smtpd_access_policy, or without a valid protocol_state, gets no reply, is cut off and spends nothing', async () => {
    server = await startPolicyServer({ host: '127.0.0.1', port: 0 }, t.ctx.sendLimits, t.ctx.sendCounter, t.ctx.log);
    const tcp = (): Socket => createConnection(server?.port ?? 0, '127.0.0.1');
    const forged = [
      req({ sasl_username: USER }),
      req({ request: 'junk', protocol_state: 'END-OF-MESSAGE', sasl_username: USER }),
      req({ request: 'smtpd_access_policy', sasl_username: USER }),
      req({ request: 'smtpd_access_policy', protocol_state: 'SPEND', sasl_username: USER }),
      '\n\n',
    ];
    for (const f of forged) {
      expect(await exchange(tcp, f + valid)).toEqual({ data: '', closed: true });
    }
    // The quota (2 per minute) is untouched: two messages pass, the third is deferred.
    const ok = await exchange(tcp, valid + valid + valid, 800);
    expect(ok.data.split('\n\n').filter(Boolean)).toEqual(['action=DUNNO', 'action=DUNNO', expect.stringMatching(/^action=450 4\.7\.1 /)]);
    const warnings = t.logs.filter((l) => l.includes('not a Postfix policy request'));
    // One line a minute however many forged requests came.
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('"level":40');
  });

  it('MAILSVC_POLICY_LISTEN=unix:… listens on a socket of mode 0660 with the given group, and answers Postfix there', async () => {
    const path = join(t.dataDir, 'policy.sock');
    const mail = loadMailSettings({ MAILSVC_POLICY_LISTEN: `unix:${path}`, MAILSVC_POLICY_SOCKET_GROUP: SOCKET_GROUP }, t.dataDir);
    expect(mail.policyListen).toMatchObject({ path });
    server = await startPolicyServer(mail.policyListen ?? { host: '127.0.0.1', port: 0 }, t.ctx.sendLimits, t.ctx.sendCounter, t.ctx.log);
    const st = statSync(path);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o660);
    expect(mail.policyListen && 'socketGroup' in mail.policyListen ? mail.policyListen.socketGroup : undefined).toBe(st.gid);
    const r = await exchange(() => createConnection(path), valid, 800);
    expect(r.data).toBe('action=DUNNO\n\n');
  });

  it('bad policy listen settings stop the start with the key named', () => {
    expect(() => loadMailSettings({ MAILSVC_POLICY_LISTEN: 'unix:relative/path' }, '/tmp')).toThrow(/MAILSVC_POLICY_LISTEN/);
    expect(() => loadMailSettings({ MAILSVC_POLICY_LISTEN: '0.0.0.0:10031' }, '/tmp')).toThrow(/MAILSVC_POLICY_LISTEN.*loopback/);
    expect(() => loadMailSettings({ MAILSVC_POLICY_MAX_CONNECTIONS: '0' }, '/tmp')).toThrow(/MAILSVC_POLICY_MAX_CONNECTIONS/);
    expect(() => loadMailSettings({ MAILSVC_MAIL_AUTH_MAX_CONNECTIONS: 'many' }, '/tmp')).toThrow(/MAILSVC_MAIL_AUTH_MAX_CONNECTIONS/);
  });
});
