import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchange, request, startHelperProcess } from '../../test/helpers/helper-process.js';
import type { HelperProcess } from '../../test/helpers/helper-process.js';
import { makeTestCa } from '../../test/helpers/test-ca.js';
import type { TestCa } from '../../test/helpers/test-ca.js';
import { bundleFromPem } from '../shared/tls-bundle.js';

/**
 * `tls-deploy`, `tls-rollback` and `tls-restart` over the helper's real
 * socket (`mailsvc helper serve`, fake daemon programs recording what runs):
 * every argument is checked before anything runs or is written, the key never
 * reaches the log, and with no daemon configured here a deploy writes the
 * certificate files (modes, owner) and skips each daemon, reporting it.
 */
describe('helper tls actions: refused before anything runs; files written as declared', () => {
  let h: HelperProcess;
  let dir: string;
  let good: TestCa;
  let other: TestCa;
  let expired: TestCa;
  const tlsDir = () => join(dir, 'tls');
  const ask = async (id: number, action: string, args: string[]) => (await exchange(h.socket, request(id, action, args), 1, 60_000)).answers[0] ?? {};
  const wire = (ca: TestCa, key = ca.key) => JSON.stringify(bundleFromPem(readFileSync(ca.chain, 'utf8'), key));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-helper-tls-'));
    [good, other, expired] = [makeTestCa(['mail.example.test']), makeTestCa(['mail.example.test']), makeTestCa(['mail.example.test'], { days: -1 })];
    h = await startHelperProcess({
      env: {
        MAILSVC_TLS_DIR: join(dir, 'tls'),
        MAILSVC_TLS_GROUP: '0',
        // No daemon is configured here: each is skipped.
        MAILSVC_POSTFIX_CONFIG_DIR: join(dir, 'no-postfix'),
        MAILSVC_DOVECOT_CONFIG: join(dir, 'no-dovecot', 'dovecot.conf'),
        MAILSVC_NGINX_CONFIG: join(dir, 'no-nginx', 'nginx.conf'),
      },
    });
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
    for (const c of [good, other, expired]) c?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses bad names, daemon lists and bundles (another key, an expired leaf, a wrong order, an Ed25519 key) before anything runs or is written', async () => {
    const ed = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const reversed = JSON.stringify({ ...bundleFromPem(readFileSync(good.chain, 'utf8'), good.key), chain: [...bundleFromPem(readFileSync(good.chain, 'utf8'), good.key).chain].reverse() });
    const cases: [string[], RegExp][] = [
      [['../etc', 'postfix', wire(good)], /<name>: certificate name must be/],
      [['Mail.Example', 'postfix', wire(good)], /<name>/],
      [['mail.example.test', 'postfix,sshd', wire(good)], /<daemons>: daemons must be/],
      [['mail.example.test', '', wire(good)], /<daemons>/],
      [['mail.example.test', 'nginx', wire(good, other.key)], /<bundle>: the key does not belong to the leaf/],
      [['mail.example.test', 'nginx', wire(expired)], /<bundle>: the leaf certificate expired/],
      [['mail.example.test', 'nginx', reversed], /<bundle>: certificate 1 of the chain is not issued by certificate 2/],
      [['mail.example.test', 'nginx', JSON.stringify({ chain: bundleFromPem(readFileSync(good.chain, 'utf8'), good.key).chain, key: createPrivateKey(ed).export({ type: 'pkcs8', format: 'der' }).toString('base64') })], /<bundle>: a key of type ed25519/],
      [['mail.example.test', 'nginx', '{"chain":"x","key":"y"}'], /<bundle>: bundle must be/],
      [['mail.example.test', 'nginx', 'not json'], /<bundle>: bundle must be JSON/],
    ];
    for (const [i, [args, detail]] of cases.entries()) {
      expect(await ask(i, 'tls-deploy', args), args.slice(0, 2).join(' ')).toMatchObject({ ok: false, error: 'invalid-argument', detail: expect.stringMatching(detail) });
    }
    expect(await ask(50, 'tls-restart', ['sshd'])).toMatchObject({ ok: false, error: 'invalid-argument' });
    expect(await ask(51, 'tls-rollback', ['/etc'])).toMatchObject({ ok: false, error: 'invalid-argument' });
    expect(h.ran()).toEqual([]);
    expect(existsSync(tlsDir())).toBe(false);
    // The key is never in the helper's log: the bundle is logged as [redacted].
    const log = JSON.stringify(h.logs());
    expect(log).toContain('[redacted]');
    expect(log).not.toContain(bundleFromPem(readFileSync(good.chain, 'utf8'), good.key).key.slice(0, 40));
  });

  it('a deploy where no daemon is configured: the files written root-owned (key 0640, directory 0750), each daemon skipped and said so; nothing to roll back after it', async () => {
    const r = await ask(60, 'tls-deploy', ['mail.example.test', 'postfix,dovecot,nginx', wire(good)]);
    expect(r).toMatchObject({ ok: true });
    const out = JSON.parse(String(r.stdout)) as { ok: boolean; sha256: string; daemons: { daemon: string; status: string; detail: string }[] };
    expect(out.ok).toBe(true);
    expect(out.daemons.map((d) => [d.daemon, d.status])).toEqual([['postfix', 'skipped'], ['dovecot', 'skipped'], ['nginx', 'skipped']]);
    expect(out.daemons[0]?.detail).toMatch(/main\.cf does not exist/);
    const d = join(tlsDir(), 'mail.example.test');
    expect(readdirSync(d).sort()).toEqual([`${out.sha256.slice(0, 16)}.chain.pem`, `${out.sha256.slice(0, 16)}.key.pem`, 'state.json']);
    expect(statSync(d).mode & 0o777).toBe(0o750);
    expect(statSync(join(d, `${out.sha256.slice(0, 16)}.key.pem`)).mode & 0o777).toBe(0o640);
    expect(statSync(join(d, `${out.sha256.slice(0, 16)}.chain.pem`)).mode & 0o777).toBe(0o644);
    expect(readFileSync(join(d, `${out.sha256.slice(0, 16)}.chain.pem`), 'utf8')).toBe(`${good.cert.trim()}\n${good.ca.trim()}\n`);
    expect(JSON.parse(String((await ask(61, 'tls-rollback', ['other.example.test'])).stdout))).toMatchObject({ ok: false, status: 'nothing' });
    expect(h.ran()).toEqual([]);
  });

  it('tls-restart runs systemctl restart <daemon>.service, for the three daemons only', async () => {
    for (const [i, daemon] of ['postfix', 'dovecot', 'nginx'].entries()) expect(await ask(70 + i, 'tls-restart', [daemon])).toMatchObject({ ok: true });
    expect(h.ran()).toEqual(['systemctl restart postfix.service', 'systemctl restart dovecot.service', 'systemctl restart nginx.service']);
  });
});
