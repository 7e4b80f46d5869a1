import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipNotice } from '../../../test/helpers/services.js';
import { knotUnavailable, startKnot } from '../../../test/helpers/knot.js';
import type { Knot } from '../../../test/helpers/knot.js';
import { prepareRspamd, rspamdUnavailable, startRspamd } from '../../../test/helpers/rspamd.js';
import type { Rspamd } from '../../../test/helpers/rspamd.js';
import { startMilterPostfix } from '../../../test/helpers/postfix-milter.js';
import type { MilterPostfix } from '../../../test/helpers/postfix-milter.js';
import { dkimVerify, dkimpyUnavailable } from '../../../test/helpers/dkim-verify.js';
import { openDnsModules } from '../../../test/helpers/dns-modules.js';
import type { DnsTestModules } from '../../../test/helpers/dns-modules.js';
import { sealedValues } from '../../../test/helpers/cli.js';
import { splitTxt } from './txt.js';

/**
 * `add domain --generate-dkim` end to end: keys made and sealed, Rspamd's
 * signing rendered through the config applier (rspamadm configtest), the
 * record published in a real knot with a dynamic update, mail submitted to a
 * real Postfix whose milter is the real Rspamd, and each signature verified
 * by dkimpy against the published record.
 */
const rspamdGid = ((): number => {
  try {
    return Number(execFileSync('getent', ['group', '_rspamd'], { encoding: 'utf8' }).split(':')[2]);
  } catch {
    return -1;
  }
})();
const why = knotUnavailable() ?? rspamdUnavailable() ?? dkimpyUnavailable();
if (why) skipNotice('knot, rspamd, postfix, python3-dkim', why);

describe.skipIf(why !== null)('DKIM keys sign mail through Postfix + Rspamd, verified against the record in knot', () => {
  let dir: string;
  let knot: Knot;
  let rspamd: Rspamd | undefined;
  let postfix: MilterPostfix | undefined;
  let m: DnsTestModules;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-dkim-'));
    knot = await startKnot({ 'example.test': ['@ MX 10 mail.example.test.', 'mail A 127.0.0.1'] });
    const prepared = await prepareRspamd(dir, knot.address);
    m = await openDnsModules(
      { MAILSVC_RSPAMD_LOCAL_DIR: prepared.localDir, MAILSVC_DKIM_ED25519: 'yes' },
    );
    // The administrator's step: add the domain with its keys (through the helper, in this process: MAILSVC_HELPER=direct).
    const domain = await m.domains.service.createWithDkim('example.test');
    expect(domain.dkim?.keys).toHaveLength(2);
    // Publish what the plan says, as the administrator (or the Cloudflare sync) would.
    for (const k of domain.dkim?.keys ?? []) {
      const strings = splitTxt(k.record_value).map((s) => `"${s}"`).join(' ');
      await knot.update('example.test', [`update add ${k.record_name}. 60 TXT ${strings}`]);
    }
    rspamd = await startRspamd(dir, prepared);
    postfix = await startMilterPostfix(`127.0.0.1:${prepared.ports.milter}`);
  }, 300_000);

  afterAll(async () => {
    await postfix?.stop();
    await rspamd?.stop();
    await m?.close();
    await knot?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('renders the signing config and 0640 key files (root, Rspamd\'s group); the private keys are stored only sealed', async () => {
    const conf = readFileSync(join(rspamd!.localDir, 'dkim_signing.conf'), 'utf8');
    const keys = await m.dns.dkim.keys('example.test');
    expect(keys.map((k) => k.algorithm).sort()).toEqual(['ed25519', 'rsa']);
    for (const k of keys) {
      const path = join(rspamd!.etcDir, 'dkim', `example.test.${k.selector}.key`);
      expect(conf).toContain(`{ selector = "${k.selector}"; path = "${path}"; }`);
      const st = statSync(path);
      expect(st.mode & 0o777).toBe(0o640);
      expect([st.uid, st.gid]).toEqual([0, rspamdGid]);
    }
    const dirStat = statSync(join(rspamd!.etcDir, 'dkim'));
    expect([dirStat.mode & 0o7777, dirStat.uid, dirStat.gid]).toEqual([0o750, 0, rspamdGid]);
    const sealed = (await sealedValues(m.infra.db)).filter((v) => v.table === 'dkim_keys');
    expect(sealed).toHaveLength(2);
    for (const s of sealed) expect(s.value).toMatch(/^v1\./);
    const rsaFile = readFileSync(join(rspamd!.etcDir, 'dkim', `example.test.${keys.find((k) => k.algorithm === 'rsa')?.selector}.key`), 'utf8');
    expect(rsaFile).toContain('BEGIN PRIVATE KEY');
    for (const s of sealed) expect(s.value).not.toContain(rsaFile.split('\n')[1]);
  });

  it('a message submitted to Postfix is signed by both keys, and dkimpy verifies both against knot', async () => {
    const message = ['From: Alice <alice@example.test>', 'To: bob@elsewhere.invalid', 'Subject: signed?', `Date: ${new Date().toUTCString()}`, 'Message-ID: <t1@example.test>', '', 'Hello, this is signed.', ''].join('\r\n');
    const signed = await postfix!.send('alice@example.test', 'bob@elsewhere.invalid', message);
    const keys = await m.dns.dkim.keys('example.test');
    const results = await dkimVerify(signed, { host: '127.0.0.1', port: knot.port });
    expect(results.sort()).toEqual(keys.map((k) => `${k.selector} ${k.algorithm === 'rsa' ? 'rsa-sha256' : 'ed25519-sha256'} pass`).sort());
  }, 60_000);

  it('the signature fails against a record that is not the signing key (the verifier is not a rubber stamp)', async () => {
    const rsa = (await m.dns.dkim.keys('example.test')).find((k) => k.algorithm === 'rsa')!;
    const message = ['From: alice@example.test', 'To: bob@elsewhere.invalid', 'Subject: tamper', '', 'body', ''].join('\r\n');
    const signed = await postfix!.send('alice@example.test', 'bob@elsewhere.invalid', message);
    const other = 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwJ9Y0h8Zs0E5v3cWcq1kR0cQ0r2nH2bH7m8x4jR9Hn5Hn1bqzF0Dk3YwJ0kH1m3N4F2oVb3g9nCqfGJ2k2b1tFQ8wq9h6k7P3n8lJ5oY0mU9cA1cN0yT9gS2k3f4n7Q6pP8mV1w2t4r5y6u7i8o9p0a1s2d3f4g5h6j7k8l9z0x1c2v3b4n5m6QIDAQAB';
    await knot.update('example.test', [`update delete ${rsa.record_name}. TXT`, `update add ${rsa.record_name}. 60 TXT "v=DKIM1; k=rsa; p=${other}"`]);
    const results = await dkimVerify(signed, { host: '127.0.0.1', port: knot.port });
    expect(results).toContain(`${rsa.selector} rsa-sha256 fail`);
  }, 60_000);
});
