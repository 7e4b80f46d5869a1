import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { openDnsModules } from '../../../test/helpers/dns-modules.js';
import type { DnsTestModules } from '../../../test/helpers/dns-modules.js';
import { skipNotice } from '../../../test/helpers/services.js';

/**
 * Migration 0011 and the dns tables on every dialect: keys sealed and listed,
 * a rotation stored and resumed, a report saved and read back, the sync
 * settings stored. (DNS answers: none, a closed port; nothing here needs them.)
 */
for (const dialect of DIALECTS) {
  const available = await dialectAvailable(dialect);
  if (!available) skipNotice(dialect, 'not reachable');
  describe.skipIf(!available)(`dns tables on ${dialect}`, () => {
    let db: TestDatabase;
    let m: DnsTestModules;
    beforeAll(async () => {
      db = await createTestDatabase(dialect);
      m = await openDnsModules({ MAILSVC_DNS_RESOLVER: '127.0.0.1:9', MAILSVC_DNS_AUTHORITATIVE: '127.0.0.1:9', MAILSVC_RSPAMD_LOCAL_DIR: '/nonexistent/local.d' }, {}, { databaseUrl: db.url });
    }, 60_000);
    afterAll(async () => {
      await m?.close();
      await db?.drop();
    });

    it('keys, a rotation, a report', async () => {
      const d = await m.domains.service.createWithDkim('example.test');
      expect(d.dkim?.keys).toHaveLength(1);
      expect(await m.dns.dkim.keys('example.test')).toEqual([expect.objectContaining({ state: 'active', algorithm: 'rsa', bits: 2048 })]);
      const s = await m.dns.rotation.rotate('example.test');
      expect(s.step).toBe('await-visible');
      expect(await m.dns.rotation.current('example.test')).toMatchObject({ step: 'await-visible', new_selector: s.new_selector });
      expect((await m.dns.dkim.keys('example.test')).map((k) => k.state).sort()).toEqual(['active', 'pending']);
      const r = await m.dns.deliverability.report('example.test', 'mail.example.test');
      expect((await m.dns.deliverability.latest('example.test')).id).toBe(r.id);
      await expect(m.dns.cloudflare.get('example.test')).rejects.toThrow(/No DNS sync/);
    }, 60_000);

    it('the DANE keys of a mail host: stored, a key change started and resumed, refused to complete early', async () => {
      const [cur, next] = ['0a'.repeat(32), '0b'.repeat(32)];
      await m.dns.dane.setCurrent('mail.example.test', cur);
      await m.dns.dane.setCurrent('mail.example.test', cur);
      expect(await m.dns.dane.status('mail.example.test')).toMatchObject({ state: 'idle', current_spki: cur, next_spki: null });
      // Nothing answers DNS here: the change waits for the records to be visible.
      const s = await m.dns.dane.prepareKeyChange('mail.example.test', next);
      expect(s).toMatchObject({ state: 'awaiting-visibility', next_spki: next, deploy_allowed: false });
      expect(s.waiting).toMatch(/127\.0\.0\.1:9 does not answer/);
      await expect(m.dns.dane.completeKeyChange('mail.example.test')).rejects.toMatchObject({ code: 'conflict' });
      expect((await m.dns.dane.list()).map((x) => [x.mail_host, x.state, x.records.length])).toEqual([['mail.example.test', 'awaiting-visibility', 2]]);
      expect((await m.dns.plan.plan('example.test', 'mail.example.test')).records.filter((r) => r.type === 'TLSA').map((r) => r.value)).toEqual([`3 1 1 ${cur}`, `3 1 1 ${next}`]);
    }, 60_000);
  });
}
