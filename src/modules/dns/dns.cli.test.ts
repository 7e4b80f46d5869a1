import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, expectOk, expectOneErrorLine, json, runCli } from '../../../test/helpers/cli.js';
import { makeTestCa } from '../../../test/helpers/test-ca.js';
import { spkiSha256 } from './dane-spki.js';

/**
 * The dns commands as an administrator runs them (the bundled CLI, its own
 * process): add domain --generate-dkim, the plan as JSON, exit codes of the
 * check (a DNS server that never answers makes every check "could not
 * determine": exit 69, never 0; a failed check: exit 1) and one-line errors.
 */
describe('mailsvc dns (CLI)', () => {
  let dir: string;
  let env: Record<string, string>;
  beforeAll(async () => {
    buildCli();
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-dns-cli-'));
    env = {
      MAILSVC_DATA_DIR: dir,
      MAILSVC_SECRET_KEY: randomBytes(32).toString('base64'),
      MAILSVC_HELPER: 'direct',
      MAILSVC_RSPAMD_LOCAL_DIR: join(dir, 'no-rspamd/local.d'),
      // Port 9 (discard): nothing answers DNS there.
      MAILSVC_DNS_RESOLVER: '127.0.0.1:9',
      MAILSVC_DNS_AUTHORITATIVE: '127.0.0.1:9',
    };
    expectOk(await runCli(['db', 'migrate'], { env }));
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('add domain --generate-dkim prints the record to publish, and the plan has it split in the zone lines', async () => {
    const add = await runCli(['add', 'domain', 'example.test', '--generate-dkim', '--json'], { env });
    expectOk(add);
    const key = (json(add) as { dkim: { keys: { record_name: string; record_value: string }[] } }).dkim.keys[0]!;
    expect(key.record_value).toMatch(/^v=DKIM1; k=rsa; p=/);
    const human = await runCli(['dns', 'plan', 'example.test', 'mail.example.test'], { env });
    expectOk(human);
    expect(human.stdout).toContain(`${key.record_name}. 3600 IN TXT "`);
    const plan = json(await runCli(['dns', 'plan', 'example.test', 'mail.example.test', '--json'], { env })) as { records: { name: string; value: string }[] };
    expect(plan.records.find((r) => r.name === key.record_name)?.value).toBe(key.record_value);
  }, 60_000);

  it('add domain --generate-dkim without a reachable helper: exit 69, one line, nothing kept; it works once the helper is there', async () => {
    const away = await runCli(['add', 'domain', 'retry.test', '--generate-dkim'], { env: { ...env, MAILSVC_HELPER: `unix:${join(dir, 'no-helper.sock')}` } });
    expect(away.code).toBe(69);
    expect(expectOneErrorLine(away)).toMatch(/cannot reach mailsvc-helper/);
    const again = await runCli(['add', 'domain', 'retry.test', '--generate-dkim', '--json'], { env });
    expectOk(again);
    expect((json(again) as { dkim: { keys: unknown[] } }).dkim.keys).toHaveLength(1);
  }, 60_000);

  it('a check whose DNS never answers is "could not determine" everywhere: exit 69 (also with --strict); a failed check exits 1', async () => {
    const unsure = await runCli(['dns', 'check', 'example.test', 'mail.example.test', '--json'], { env, timeoutMs: 60_000 });
    expect(unsure.code, unsure.stderr).toBe(69);
    const r = json(unsure) as { counts: { pass: number; fail: number; unknown: number } };
    expect(r.counts).toMatchObject({ pass: 0, fail: 0 });
    expect(r.counts.unknown).toBeGreaterThan(5);
    expect((await runCli(['dns', 'check', 'example.test', 'mail.example.test', '--strict'], { env, timeoutMs: 60_000 })).code).toBe(69);
    expectOk(await runCli(['add', 'domain', 'nokey.test'], { env }));
    const failed = await runCli(['dns', 'check', 'nokey.test', 'mail.nokey.test'], { env, timeoutMs: 60_000 });
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/FAIL {2}DKIM: nokey\.test has no DKIM key/);
  }, 120_000);

  it('mailsvc doctor reads the saved reports: a domain whose report failed a check fails, with what to do', async () => {
    const report = await runCli(['dns', 'report', 'nokey.test', 'mail.nokey.test'], { env, timeoutMs: 60_000 });
    expect(report.code).toBe(1);
    const doctor = await runCli(['doctor', '--json'], { env, timeoutMs: 120_000 });
    const checks = (json(doctor) as { checks: { id: string; status: string; detail: string; fix: string | null }[] }).checks;
    const line = checks.find((c) => c.id === 'dns.nokey.test');
    expect(line, JSON.stringify(checks.map((c) => c.id))).toMatchObject({ status: 'fail', fix: expect.stringMatching(/mailsvc dns plan nokey\.test mail\.nokey\.test/) });
    expect(line?.detail).toMatch(/checks failed at .*dkim/i);
    expect(doctor.code).toBe(1);
  }, 180_000);

  it('dns dane adopt a certificate file, status and advance; the plan holds its TLSA record; errors are one line', async () => {
    const ca = makeTestCa(['mail.example.test']);
    try {
      expect(json(await runCli(['dns', 'dane', 'status', '--json'], { env }))).toEqual([]);
      const adopt = await runCli(['dns', 'dane', 'adopt', 'mail.example.test', '--cert', join(ca.dir, 'server.pem'), '--json'], { env });
      expectOk(adopt);
      const spki = spkiSha256(ca.cert);
      expect(json(adopt)).toMatchObject({ mail_host: 'mail.example.test', state: 'idle', current_spki: spki, records: [`3 1 1 ${spki}`] });
      const human = await runCli(['dns', 'dane', 'status', 'mail.example.test'], { env });
      expectOk(human);
      expect(human.stdout).toContain(`_25._tcp.mail.example.test. IN TLSA 3 1 1 ${spki}`);
      expect(json(await runCli(['dns', 'dane', 'advance', 'mail.example.test', '--json'], { env }))).toMatchObject({ state: 'idle' });
      expect(json(await runCli(['dns', 'dane', 'advance', '--json'], { env }))).toEqual([]);
      const plan = await runCli(['dns', 'plan', 'example.test', 'mail.example.test'], { env });
      expect(plan.stdout).toContain(`_25._tcp.mail.example.test. 3600 IN TLSA 3 1 1 ${spki}`);
      const missing = await runCli(['dns', 'dane', 'adopt', 'mail.example.test', '--cert', join(dir, 'nothing.pem')], { env });
      expect(missing.code).toBe(2);
      expect(expectOneErrorLine(missing)).toMatch(/cannot read .*nothing\.pem: ENOENT/);
      const notPem = await runCli(['dns', 'dane', 'adopt', 'mail.example.test', '--cert', join(ca.dir, 'ext.cnf')], { env });
      expect(expectOneErrorLine(notPem)).toMatch(/not a PEM certificate or key/);
      expect((await runCli(['dns', 'dane', 'status', 'other.example.test'], { env })).code).toBe(4);
      // Nothing changed by the refused commands.
      expect(json(await runCli(['dns', 'dane', 'status', 'mail.example.test', '--json'], { env }))).toMatchObject({ current_spki: spki });
    } finally {
      ca.cleanup();
    }
  }, 120_000);

  it('errors are one line with the right exit code', async () => {
    expect(expectOneErrorLine(await runCli(['dns', 'rotate-dkim'], { env }))).toMatch(/name a domain, or use --due/);
    const unset = await runCli(['dns', 'sync-dkim', 'example.test'], { env });
    expect(unset.code).toBe(2);
    expect(expectOneErrorLine(unset)).toMatch(/configure-cloudflare/);
    expect((await runCli(['dns', 'plan', 'missing.test', 'mail.missing.test'], { env })).code).toBe(4);
    expect((await runCli(['add', 'domain', 'example.test', '--generate-dkim'], { env })).code).toBe(3);
  }, 60_000);
});
