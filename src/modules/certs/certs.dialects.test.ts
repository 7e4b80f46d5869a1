import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { createDb } from '../../db/database.js';
import type { Db } from '../../db/database.js';
import { migrateToLatest } from '../../app/schema.js';
import { CertRepository } from './cert.repository.js';
import type { CertRow } from './cert.repository.js';
import { backoffMs, renewalDecision, renewalTime } from './cert.service.js';

const DAY = 86_400_000;

/** The certs tables on every dialect: times come back as numbers, rows are made once, accounts are kept per CA. */
for (const dialect of DIALECTS) {
  describe(`certificates repository (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let t: TestDatabase;
    let db: Db;
    beforeAll(async () => {
      if (!available) return;
      t = await createTestDatabase(dialect);
      db = createDb(t.url);
      await migrateToLatest(db);
    }, 60_000);
    afterAll(async () => {
      await db?.destroy();
      await t?.drop();
    });

    it.skipIf(!available)('ensure makes the row once; update and read give numbers for every time (bigint on PostgreSQL is text)', async () => {
      const repo = new CertRepository(db);
      const now = 1_790_000_000_000;
      const a = await repo.ensure('mail', ['mail.example.org'], now);
      const b = await repo.ensure('mail', ['other.example.org'], now + 1);
      expect(b).toEqual(a);
      expect(a).toMatchObject({ name: 'mail', names: '["mail.example.org"]', failures: 0, chain_pem: null, created_at: now });
      await repo.update('mail', { not_before: now, not_after: now + 90 * DAY, failures: 2, next_attempt_at: now + 3_600_000, ari_start: null, updated_at: now + 5 });
      const r = (await repo.get('mail')) as CertRow;
      expect(r).toMatchObject({ not_before: now, not_after: now + 90 * DAY, failures: 2, next_attempt_at: now + 3_600_000, ari_start: null, updated_at: now + 5 });
      expect(typeof r.not_after).toBe('number');
      expect((await repo.list()).map((x) => x.name)).toEqual(['mail']);
      expect(await repo.get('nothing')).toBeUndefined();
    });

    it.skipIf(!available)('an ACME account is stored once per directory; a second put keeps the first key', async () => {
      const repo = new CertRepository(db);
      const first = await repo.putAccount({ id: 'a'.repeat(32), directory_url: 'https://ca.example/dir', account_key: 'sealed-1', account_url: null, created_at: 1 });
      const second = await repo.putAccount({ id: 'a'.repeat(32), directory_url: 'https://ca.example/dir', account_key: 'sealed-2', account_url: null, created_at: 2 });
      expect(second.account_key).toBe(first.account_key);
      await repo.setAccountUrl('a'.repeat(32), 'https://ca.example/acct/1');
      expect((await repo.account('a'.repeat(32)))?.account_url).toBe('https://ca.example/acct/1');
    });
  });
}

describe('when a certificate renews', () => {
  const now = 1_790_000_000_000;
  const row = (over: Partial<CertRow> = {}): CertRow => ({
    name: 'mail', names: '["mail.example.org"]', chain_pem: 'PEM', private_key: 'sealed', serial: '01', sha256: 'ab',
    not_before: now - 10 * DAY, not_after: now + 80 * DAY, ari_start: null, ari_end: null, ari_next_check: null,
    issued_at: now - 10 * DAY, revoked_at: null, last_attempt_at: null, last_error: null, failures: 0, next_attempt_at: null,
    proof: null, pending_chain_pem: null, pending_private_key: null, pending_names: null, pending_since: null, created_at: 0, updated_at: 0, ...over,
  });

  it('at two thirds of its lifetime: not a day before', () => {
    const r = row({ not_before: now - 60 * DAY, not_after: now + 30 * DAY });
    expect(renewalTime(r)).toBe(now);
    expect(renewalDecision(r, null, now - 1)).toMatchObject({ due: false, why: expect.stringMatching(/two thirds/) });
    expect(renewalDecision(r, null, now)).toMatchObject({ due: true, why: 'two thirds of its lifetime have passed' });
  });

  it("the CA's ARI window wins over two thirds, either way", () => {
    expect(renewalDecision(row({ ari_start: now - 1 }), null, now)).toMatchObject({ due: true, why: expect.stringMatching(/ARI/) });
    expect(renewalDecision(row({ not_before: now - 80 * DAY, not_after: now + 10 * DAY, ari_start: now + DAY }), null, now)).toMatchObject({ due: false, why: expect.stringMatching(/ARI/) });
  });

  it('none yet, revoked or names changed: due now; a backoff after failures holds everything off', () => {
    expect(renewalDecision(row({ chain_pem: null }), null, now).due).toBe(true);
    expect(renewalDecision(row({ revoked_at: now - 1 }), null, now).why).toBe('the certificate was revoked');
    expect(renewalDecision(row(), ['mail.example.org', 'mta-sts.example.org'], now).why).toBe('the names changed');
    expect(renewalDecision(row(), ['mail.example.org'], now).due).toBe(false);
    expect(renewalDecision(row({ chain_pem: null, failures: 3, next_attempt_at: now + 1 }), null, now)).toMatchObject({ due: false, why: expect.stringMatching(/after 3 failed attempts/) });
  });

  it('the backoff doubles from the base up to the longest wait', () => {
    expect([1, 2, 3, 4, 10].map((f) => backoffMs(f, 3600, 86_400) / 1000)).toEqual([3600, 7200, 14_400, 28_800, 86_400]);
  });
});
