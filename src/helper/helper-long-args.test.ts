import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchange, request, startHelperProcess } from '../../test/helpers/helper-process.js';
import type { HelperProcess } from '../../test/helpers/helper-process.js';
import { helperSigning } from '../modules/dns/dkim-signing.js';
import { HELPER_LIST_ARG_MAX } from '../shared/dkim-names.js';
import { SocketHelperClient } from './socket-client.js';

/**
 * The signing set and the SRS list may be long (every domain of the server):
 * those two actions take arguments up to 60 KiB, every other one 4096
 * characters. Over the real socket: a set of 700 domains fits the 64 KiB
 * request line and reaches the helper's own check; the service refuses a set
 * that would not fit before it sends anything.
 */
describe('long arguments of dkim-signing-apply and srs-domains-apply', () => {
  let h: HelperProcess;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-helper-long-'));
    mkdirSync(join(dir, 'rspamd/local.d'), { recursive: true });
    h = await startHelperProcess({ env: { MAILSVC_RSPAMD_LOCAL_DIR: join(dir, 'rspamd/local.d'), MAILSVC_POSTSRSD_DEFAULTS: join(dir, 'postsrsd') } });
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const set = (n: number) => Array.from({ length: n }, (_, i) => ({ domain: `domain-${i}.example.org`, selectors: [{ selector: '202611' }] }));

  it('a signing set of 700 domains (about 57 KiB as it travels) goes through and is checked by the helper (no key files: refused, nothing written)', async () => {
    const arg = JSON.stringify(set(700));
    expect(arg.length).toBeGreaterThan(4096);
    expect(JSON.stringify(arg).length).toBeLessThanOrEqual(HELPER_LIST_ARG_MAX);
    const r = await new SocketHelperClient(h.socket).run('dkim-signing-apply', [arg]);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, detail: expect.stringMatching(/no key file for selector 202611 of domain-0\.example\.org/) });
    expect(readdirSync(join(dir, 'rspamd/local.d'))).toEqual([]);
  });

  it('other actions still refuse an argument over 4096 characters before anything runs', async () => {
    const { answers } = await exchange(h.socket, request(1, 'f2b-jail-bans', ['j'.repeat(4097)]), 1);
    expect(answers[0]).toMatchObject({ ok: false, error: 'malformed', detail: expect.stringMatching(/longer than 4096/) });
    const { answers: long } = await exchange(h.socket, request(2, 'dkim-signing-apply', ['x'.repeat(HELPER_LIST_ARG_MAX + 1)]), 1);
    expect(long[0]).toMatchObject({ ok: false });
    expect(h.ran()).toEqual([]);
  });

  it('an SRS list longer than 4096 characters is accepted (the file is missing here: reported, nothing written)', async () => {
    const list = Array.from({ length: 300 }, (_, i) => `domain-${i}.example.org`).join(',');
    const r = await new SocketHelperClient(h.socket).run('srs-domains-apply', [list]);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, status: 'missing' });
  });

  it('the service refuses a signing set that would not fit, before sending any key', async () => {
    const keys = set(1300).map((d) => ({ domain: d.domain, selector: '202611', algorithm: 'rsa' as const, privateKey: 'never opened' }));
    const before = h.logs().length;
    await expect(helperSigning(new SocketHelperClient(h.socket)).applySigning(keys)).rejects.toThrow(/1300 domains do not fit one signing update/);
    expect(h.logs().length).toBe(before);
  });
});
