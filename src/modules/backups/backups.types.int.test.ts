import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import { expectOk, json } from '../../../test/helpers/cli.js';
import { backupEnv, makeMailStorage, treeSnapshot, writeMessage } from '../../../test/helpers/backups.js';

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

describe('backup types, compression and what a backup holds', () => {
  it('TYPE=auto: a full on FULL_WEEKDAY (once that day), incrementals after; another weekday with no chain starts with a full', async () => {
    const db = await createTestDatabase('sqlite');
    const today = WEEKDAYS[new Date().getDay()] ?? 'Sun';
    const other = WEEKDAYS[(new Date().getDay() + 3) % 7] ?? 'Wed';
    const t = backupEnv(db.url, { MAILSVC_BACKUP_TYPE: 'auto', MAILSVC_BACKUP_FULL_WEEKDAY: today });
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 1, 3);
      const a = json(await t.cli(['backup', 'run', '--json']));
      const b = json(await t.cli(['backup', 'run', '--json']));
      expect([a.type, b.type, b.parent]).toEqual(['full', 'incremental', a.id]);
      const o = backupEnv(db.url, { MAILSVC_BACKUP_TYPE: 'auto', MAILSVC_BACKUP_FULL_WEEKDAY: other, MAILSVC_MAIL_STORAGE: t.mail });
      try {
        const c = json(await o.cli(['backup', 'run', '--json']));
        const d = json(await o.cli(['backup', 'run', '--json']));
        expect([c.type, d.type, d.parent]).toEqual(['full', 'incremental', c.id]);
      } finally {
        rmSync(o.dir, { recursive: true, force: true });
      }
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
    }
  }, 120_000);

  it('COMPRESSION=zstd round trip; the backup holds the database dump and the configuration', async () => {
    const db = await createTestDatabase('sqlite');
    const t = backupEnv(db.url, { MAILSVC_BACKUP_COMPRESSION: 'zstd' });
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 2, 5);
      writeFileSync(join(t.data, 'mailsvc.conf'), 'MAILSVC_LOG_LEVEL=info\n');
      const f = json(await t.cli(['backup', 'run', '--json']));
      writeMessage(join(t.mail, 'example.com', 'user1', 'Maildir', 'new'), 500, Date.now());
      const i = json(await t.cli(['backup', 'run', '--json']));
      const files = readdirSync(String(i.path)).sort();
      expect(files).toEqual(['config.tar', 'database.sqlite', 'mail.snar', 'mail.tar.zst', 'manifest.hmac', 'manifest.json']);
      const conf = execFileSync('tar', ['-tf', join(String(f.path), 'config.tar')], { encoding: 'utf8' });
      expect(conf).toContain(`${t.data.slice(1)}/mailsvc.conf`);
      expect(conf).toContain('etc-postfix/main.cf');
      const tree = treeSnapshot(t.mail);
      rmSync(t.mail, { recursive: true });
      expectOk(await t.cli(['restore', '--source', String(i.path), '--restore-files']));
      expect(treeSnapshot(t.mail)).toEqual(tree);
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
    }
  }, 120_000);
});
