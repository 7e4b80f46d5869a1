import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHelperProcess } from '../../../test/helpers/helper-process.js';
import type { HelperProcess } from '../../../test/helpers/helper-process.js';
import { prepareRspamd, rspamdUnavailable } from '../../../test/helpers/rspamd.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';
import { expectOneErrorLine, runCli } from '../../../test/helpers/cli.js';
import { openDnsModules } from '../../../test/helpers/dns-modules.js';
import type { DnsTestModules } from '../../../test/helpers/dns-modules.js';
import { DomainRepository } from './domain.repository.js';
import { DomainService } from './domain.service.js';
import { retireDomainKeys } from '../dns/index.js';

const hasRspamdGroup = spawnSync('getent', ['group', '_rspamd']).status === 0;
const why = rspamdUnavailable() ?? (hasRspamdGroup ? null : 'no group _rspamd (Debian package rspamd)');
if (why) skipNotice('rspamd, rspamadm (root)', why);
const postgres = why === null && (await dialectAvailable('postgres'));

type KeyView = { selector: string; state: string };

/**
 * Deleting a domain retires its DKIM keys through the real root helper
 * (its own process, on its socket) and Rspamd's real configuration check:
 * the signing configuration is re-applied without it, its key files are
 * removed, its keys are retired, its rotation and DNS provider settings
 * dropped; the same name can then get new keys. A helper that cannot do its
 * part refuses the delete and changes nothing. The service runs on PostgreSQL
 * (API) and as the CLI on the same database.
 */
describe.skipIf(!postgres)('deleting a domain stops Rspamd signing for it and retires its keys (real helper, rspamadm configtest)', { timeout: 300_000 }, () => {
  let dir: string;
  let helper: HelperProcess;
  let prepared: Awaited<ReturnType<typeof prepareRspamd>>;
  let db: TestDatabase;
  let t: TestApp;
  let cliEnv: Record<string, string>;
  const firstSelectors: string[] = [];
  const keyDir = () => join(prepared.etcDir, 'dkim');
  const conf = () => join(prepared.localDir, 'dkim_signing.conf');
  const keyFiles = (domain: string) => (existsSync(keyDir()) ? readdirSync(keyDir()).filter((f) => f.startsWith(`${domain}.`)).sort() : []);
  const api = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) => call(t, method, url, t.basic(), body);
  const cli = (args: string[], env: Record<string, string> = {}) => runCli(args, { env: { ...cliEnv, ...env }, timeoutMs: 120_000 });
  const configtest = () => spawnSync('rspamadm', [`--var=LOCAL_CONFDIR=${prepared.etcDir}`, 'configtest'], { encoding: 'utf8', timeout: 120_000 });
  const keyRows = (domain: string) => t.ctx.db.selectFrom('dkim_keys').select(['selector', 'state', 'retired_at']).where('domain', '=', domain).execute();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-domain-dkim-'));
    chmodSync(dir, 0o755);
    // Rspamd's configuration as Debian ships it (no DNS server needed: nothing here resolves).
    prepared = await prepareRspamd(dir, '127.0.0.1:9');
    // systemctl as the helper sees it: Rspamd not running (the files are written and checked, nothing to reload).
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'systemctl'), '#!/bin/sh\n[ "$1" = is-active ] && exit 3\nexit 1\n', { mode: 0o755 });
    const daemons = { MAILSVC_RSPAMD_LOCAL_DIR: prepared.localDir, MAILSVC_RSPAMD_GROUP: '_rspamd' };
    helper = await startHelperProcess({ fakes: false, env: { ...daemons, PATH: `${bin}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` } });
    db = await createTestDatabase('postgres');
    const env = {
      MAILSVC_MFA_REQUIRED: 'no',
      MAILSVC_HELPER: `unix:${helper.socket}`,
      // Rotation checks ask nobody that answers: a rotation stays at await-visible.
      MAILSVC_DNS_RESOLVER: '127.0.0.1:9',
      MAILSVC_DNS_AUTHORITATIVE: '127.0.0.1:9',
      ...daemons,
    };
    t = await startTestApp(db.url, env);
    const cliData = join(dir, 'cli-data');
    mkdirSync(cliData);
    cliEnv = { ...env, MAILSVC_DATA_DIR: cliData, HOME: cliData, MAILSVC_DATABASE_URL: db.url, MAILSVC_SECRET_KEY: t.settings.secretKey ?? '' };
  }, 300_000);

  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await helper?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('two domains with keys, both in the signing configuration; one of them is in the middle of a rotation and has DNS provider settings', async () => {
    for (const name of ['gone.test', 'stays.test']) {
      const r = await api('POST', '/domains', { name, generate_dkim: true });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    }
    const text = readFileSync(conf(), 'utf8');
    expect(text).toMatch(/gone\.test/);
    expect(text).toMatch(/stays\.test/);
    // A second call starts the rotation: a pending key, stored step await-visible (nobody answers DNS here).
    const rot = await api('POST', '/domains/gone.test/dkim', {});
    expect(rot.status, JSON.stringify(rot.body)).toBe(200);
    const keys: KeyView[] = await keyRows('gone.test');
    expect(keys.map((k) => k.state).sort()).toEqual(['active', 'pending']);
    firstSelectors.push(...keys.map((k) => k.selector));
    expect(await t.ctx.db.selectFrom('dkim_rotations').select('domain').execute()).toEqual([{ domain: 'gone.test' }]);
    await t.ctx.db.insertInto('dns_sync').values({ domain: 'gone.test', provider: 'cloudflare', zone_id: 'z'.repeat(32), api_token: 'v1.not-a-real-seal', enabled: 1, updated_at: Date.now(), last_sync_at: null }).execute();
    expect(keyFiles('gone.test')).toHaveLength(1);
  });

  it('the helper cannot be reached: the CLI refuses the delete (exit 69, what to do), nothing changes', async () => {
    const before = { conf: readFileSync(conf(), 'utf8'), files: keyFiles('gone.test') };
    const r = await cli(['domains', 'delete', 'gone.test'], { MAILSVC_HELPER: `unix:${join(dir, 'no-helper.sock')}` });
    expect(r.code).toBe(69);
    const line = expectOneErrorLine(r);
    expect(line).toMatch(/gone\.test was not deleted/);
    expect(line).toMatch(/mailsvc-helper\.socket/);
    expect((await api('GET', '/domains/gone.test')).status).toBe(200);
    expect((await keyRows('gone.test')).map((k) => k.state).sort()).toEqual(['active', 'pending']);
    expect({ conf: readFileSync(conf(), 'utf8'), files: keyFiles('gone.test') }).toEqual(before);
  });

  it('Rspamd refuses the new configuration: DELETE answers 409 naming the check, nothing changes', async () => {
    const before = { conf: readFileSync(conf(), 'utf8'), files: keyFiles('gone.test') };
    const broken = join(prepared.localDir, 'options.inc');
    writeFileSync(broken, 'this is { not ucl\n');
    try {
      const r = await api('DELETE', '/domains/gone.test');
      expect(r.status).toBe(409);
      expect(String(r.body.detail)).toMatch(/gone\.test was not deleted: Rspamd still signs its mail .*check of rspamd failed/);
    } finally {
      rmSync(broken);
    }
    expect((await api('GET', '/domains/gone.test')).status).toBe(200);
    expect({ conf: readFileSync(conf(), 'utf8'), files: keyFiles('gone.test') }).toEqual(before);
    expect(await t.ctx.db.selectFrom('dns_sync').select('domain').execute()).toEqual([{ domain: 'gone.test' }]);
  });

  it('DELETE /domains/gone.test: Rspamd no longer signs for it (rspamadm configtest passes), its key files are gone, its keys retired, rotation and sync settings dropped; the other domain still signs', async () => {
    const staysFiles = keyFiles('stays.test');
    const r = await api('DELETE', '/domains/gone.test');
    expect(r.status, JSON.stringify(r.body)).toBe(204);
    const text = readFileSync(conf(), 'utf8');
    expect(text).not.toMatch(/gone\.test/);
    expect(text).toMatch(/stays\.test/);
    const check = configtest();
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    expect(keyFiles('gone.test')).toEqual([]);
    expect(keyFiles('stays.test')).toEqual(staysFiles);
    expect(staysFiles).toHaveLength(1);
    const rows = await keyRows('gone.test');
    expect(rows).toHaveLength(2);
    for (const k of rows) expect([k.state, typeof k.retired_at === 'number' || typeof k.retired_at === 'string']).toEqual(['retired', true]);
    expect(await t.ctx.db.selectFrom('dkim_rotations').select('domain').execute()).toEqual([]);
    expect(await t.ctx.db.selectFrom('dns_sync').select('domain').execute()).toEqual([]);
    expect((await api('GET', '/domains/gone.test')).status).toBe(404);
    expect((await api('GET', '/domains/gone.test/dns-plan?mail_host=mail.gone.test')).status).toBe(404);
  });

  it('the same domain added again with --generate-dkim (CLI) gets new keys under a new selector, in the signing configuration with their key file', async () => {
    const r = await cli(['add', 'domain', 'gone.test', '--generate-dkim', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { dkim: { keys: { selector: string }[] } };
    const selector = out.dkim.keys[0]?.selector ?? '';
    expect(firstSelectors).not.toContain(selector);
    expect(readFileSync(conf(), 'utf8')).toContain(`selector = "${selector}"`);
    expect(keyFiles('gone.test')).toEqual([`gone.test.${selector}.key`]);
  });

  it('mailsvc domains delete (CLI) retires them again; a domain without keys is deleted even with no helper at all', async () => {
    const r = await cli(['domains', 'delete', 'gone.test', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ ok: true, deleted: 'gone.test' });
    expect(readFileSync(conf(), 'utf8')).not.toMatch(/gone\.test/);
    expect(keyFiles('gone.test')).toEqual([]);
    expect((await keyRows('gone.test')).every((k) => k.state === 'retired')).toBe(true);
    expect((await cli(['add', 'domain', 'plain.test'])).code).toBe(0);
    const plain = await cli(['domains', 'delete', 'plain.test'], { MAILSVC_HELPER: `unix:${join(dir, 'no-helper.sock')}` });
    expect(plain.code, plain.stderr).toBe(0);
  });

  it('an add --generate-dkim that stopped halfway (docs/reliability.md) is completed by running it again: keys for a domain left without them; the key file back for one whose signing was never rendered, still 409', async () => {
    // Stopped after the domain's row, before its keys (the process killed): a domain without keys.
    expect((await cli(['add', 'domain', 'half.test'])).code).toBe(0);
    const again = await cli(['add', 'domain', 'half.test', '--generate-dkim', '--json']);
    expect(again.code, again.stderr).toBe(0);
    const selector = (JSON.parse(again.stdout) as { dkim: { keys: { selector: string }[] } }).dkim.keys[0]?.selector ?? '';
    expect(keyFiles('half.test')).toEqual([`half.test.${selector}.key`]);
    expect(readFileSync(conf(), 'utf8')).toContain(`selector = "${selector}"`);
    // Stopped after the keys' rows, before Rspamd's files: the key file is missing. Run again: 409 (the domain and
    // its keys exist), and the signing is rendered from the stored keys on the way.
    rmSync(join(keyDir(), `half.test.${selector}.key`));
    const third = await cli(['add', 'domain', 'half.test', '--generate-dkim']);
    expect(third.code).toBe(3);
    expect(expectOneErrorLine(third)).toMatch(/half\.test already exists/);
    expect(keyFiles('half.test')).toEqual([`half.test.${selector}.key`]);
    expect(configtest().status).toBe(0);
    expect((await cli(['domains', 'delete', 'half.test'])).code).toBe(0);
  });
});

/**
 * The transaction after the helper's part fails (here: the dns module's part
 * of it throws, as a database error would): the domain stays, and Rspamd
 * signs for it again, its key files installed again from the sealed keys,
 * through the helper (in this process, as root) and rspamadm configtest.
 */
describe.skipIf(why !== null)('a delete whose transaction fails puts Rspamd signing back', { timeout: 300_000 }, () => {
  let dir: string;
  let m: DnsTestModules;
  let prepared: Awaited<ReturnType<typeof prepareRspamd>>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-domain-dkim-tx-'));
    prepared = await prepareRspamd(dir, '127.0.0.1:9');
    m = await openDnsModules({ MAILSVC_RSPAMD_LOCAL_DIR: prepared.localDir, MAILSVC_RSPAMD_GROUP: '_rspamd' });
  }, 300_000);

  afterAll(async () => {
    await m?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the domain, its active keys, the signing configuration and the key files are as before', async () => {
    const dkim = m.dns.dkim;
    await m.domains.service.createWithDkim('tx.test');
    const conf = join(prepared.localDir, 'dkim_signing.conf');
    const keyDir = join(prepared.etcDir, 'dkim');
    const before = { conf: readFileSync(conf, 'utf8'), files: readdirSync(keyDir).sort(), keys: readdirSync(keyDir).map((f) => readFileSync(join(keyDir, f), 'utf8')) };
    expect(before.conf).toMatch(/tx\.test/);
    let stoppedConf = '';
    // The dns module's listener, with its part in the transaction failing.
    const retire = retireDomainKeys(dkim);
    const failing = new DomainService(new DomainRepository(m.infra.db), m.infra.clock, undefined, {
      listeners: async () => [
        {
          ...retire,
          before: async (e) => {
            await retire.before?.(e);
            stoppedConf = readFileSync(conf, 'utf8');
          },
          within: () => Promise.reject(new Error('the database went away')),
        },
      ],
    });
    await expect(failing.delete('tx.test')).rejects.toThrow(/the database went away/);
    // It did stop signing for a moment (the helper's part ran), then put it back.
    expect(stoppedConf).not.toMatch(/tx\.test/);
    expect((await m.domains.service.get('tx.test')).name).toBe('tx.test');
    expect((await dkim.keys('tx.test')).map((k) => k.state)).toEqual(['active']);
    expect({ conf: readFileSync(conf, 'utf8'), files: readdirSync(keyDir).sort(), keys: readdirSync(keyDir).map((f) => readFileSync(join(keyDir, f), 'utf8')) }).toEqual(before);
    const check = spawnSync('rspamadm', [`--var=LOCAL_CONFDIR=${prepared.etcDir}`, 'configtest'], { encoding: 'utf8', timeout: 120_000 });
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
  });
});
