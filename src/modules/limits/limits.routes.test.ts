import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { call } from '../../../test/helpers/flows.js';
import { LIMITS } from '../../shared/limit-keys.js';

/** GET/PATCH /admin/limits on every dialect: one object, any subset, all or nothing, 422 naming the key. */
for (const dialect of DIALECTS) {
  describe(`/admin/limits (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    let daemons: string;
    beforeEach(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      // Daemon config locations that do not exist: apply reports each daemon skipped.
      daemons = mkdtempSync(join(tmpdir(), 'mailsvc-limits-none-'));
      t = await startTestApp(db.url, {
        MAILSVC_MFA_REQUIRED: 'no',
        MAILSVC_API_AUTH_FAIL_LIMIT: '50',
        MAILSVC_SMTP_RECIPIENT_LIMIT: '200',
        MAILSVC_POSTFIX_CONFIG_DIR: join(daemons, 'postfix'),
        MAILSVC_RSPAMD_LOCAL_DIR: join(daemons, 'rspamd/local.d'),
        MAILSVC_DOVECOT_CONFIG: join(daemons, 'dovecot/dovecot.conf'),
        MAILSVC_FAIL2BAN_CONFIG_DIR: join(daemons, 'fail2ban'),
        MAILSVC_FAIL2BAN_SOCKET: join(daemons, 'fail2ban.sock'),
        // The helper's apply-limits, run in this process (the tests run as root).
        MAILSVC_HELPER: 'direct',
      });
    });
    afterEach(async () => {
      await t?.close();
      await db?.drop();
      if (daemons) rmSync(daemons, { recursive: true, force: true });
    });

    it.skipIf(!available)('GET answers one object with a key per limit: defaults, MAILSVC_<KEY> over the built-in one', async () => {
      const r = await call(t, 'GET', '/admin/limits', t.basic());
      expect(r.status).toBe(200);
      expect(Object.keys(r.body).sort()).toEqual(LIMITS.map((l) => l.key).sort());
      expect(r.body['message-size-limit']).toBe(50 * 1024 * 1024);
      expect(r.body['smtp-recipient-limit']).toBe(200);
      expect(r.body['api-auth-fail-limit']).toBe(50);
      expect(r.body['fail2ban-recidive-bantime']).toBe(604_800);
    });

    it.skipIf(!available)('PATCH stores any subset; sizes and durations accepted with suffixes, answered as bytes and seconds', async () => {
      const r = await call(t, 'PATCH', '/admin/limits', t.basic(), { 'message-size-limit': '25M', 'fail2ban-sshd-bantime': '4h', 'greylist-delay': '10m', 'spam-score-reject': 12.5, 'smtp-recipient-limit': 300 });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ 'message-size-limit': 26_214_400, 'fail2ban-sshd-bantime': 14_400, 'greylist-delay': 600, 'spam-score-reject': 12.5, 'smtp-recipient-limit': 300, 'dkim-key-bits': 2048 });
      const rows = await t.ctx.db.selectFrom('limits').select(['key', 'value']).orderBy('key').execute();
      expect(rows).toEqual([
        { key: 'fail2ban-sshd-bantime', value: '14400' },
        { key: 'greylist-delay', value: '600' },
        { key: 'message-size-limit', value: '26214400' },
        { key: 'smtp-recipient-limit', value: '300' },
        { key: 'spam-score-reject', value: '12.5' },
      ]);
      // A second app on the same database reads the stored values.
      const again = await call(t, 'GET', '/admin/limits', t.basic());
      expect(again.body['fail2ban-sshd-bantime']).toBe(14_400);
    });

    it.skipIf(!available)('an unknown key or a bad value is 422 naming the key, and NOTHING of the request is stored', async () => {
      const before = (await call(t, 'GET', '/admin/limits', t.basic())).body;
      const cases: [Record<string, unknown>, string][] = [
        [{ 'smtp-recipient-limit': 10, 'no-such-limit': 5 }, 'no-such-limit'],
        [{ 'smtp-recipient-limit': 10, 'message-size-limit': '50X' }, 'message-size-limit'],
        [{ 'smtp-recipient-limit': 10, 'fail2ban-sshd-bantime': '-1' }, 'fail2ban-sshd-bantime'],
        [{ 'smtp-recipient-limit': 10, 'dkim-key-bits': 1500 }, 'dkim-key-bits'],
        [{ 'smtp-recipient-limit': 10, 'api-auth-fail-limit': 0 }, 'api-auth-fail-limit'],
        [{ 'smtp-recipient-limit': 10, 'spam-score-greylist': true }, 'spam-score-greylist'],
        [{ 'smtp-recipient-limit': 10, 'greylist-delay': 1.5 }, 'greylist-delay'],
      ];
      for (const [body, key] of cases) {
        const r = await call(t, 'PATCH', '/admin/limits', t.basic(), body);
        expect(r.status, JSON.stringify(body)).toBe(422);
        expect(String(r.body.detail)).toContain(key);
      }
      expect((await call(t, 'GET', '/admin/limits', t.basic())).body).toEqual(before);
      expect(await t.ctx.db.selectFrom('limits').selectAll().execute()).toEqual([]);
    });

    it.skipIf(!available)('apply with no daemon configuration present reports each daemon skipped, not an error', async () => {
      const r = await call(t, 'POST', '/admin/limits/apply', t.basic());
      expect(r.status).toBe(200);
      expect((r.body.daemons as { daemon: string; status: string }[]).map((d) => [d.daemon, d.status])).toEqual([
        ['postfix', 'skipped'],
        ['rspamd', 'skipped'],
        ['dovecot', 'skipped'],
        ['fail2ban', 'skipped'],
      ]);
    });
  });
}
