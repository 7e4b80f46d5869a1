import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import { expectOk, json } from '../../../test/helpers/cli.js';
import { backupEnv, makeMailStorage } from '../../../test/helpers/backups.js';
import { queuePostfixUnavailable, startQueuePostfix } from '../../../test/helpers/postfix-queue.js';
import { skipNotice } from '../../../test/helpers/services.js';

const execFileP = promisify(execFile);
const why = queuePostfixUnavailable();
if (why) skipNotice('Postfix (restore stops intake)', why);

describe('restore stops Postfix intake through the helper', () => {
  it.skipIf(why !== null)('a running Postfix is stopped for the restore and started again; the report says so', async () => {
    const postfix = await startQueuePostfix();
    const db = await createTestDatabase('sqlite');
    const t = backupEnv(db.url, { MAILSVC_POSTFIX_CONFIG_DIR: postfix.configDir });
    try {
      expectOk(await t.cli(['db', 'migrate']));
      makeMailStorage(t.mail, 1, 4);
      const b = json(await t.cli(['backup', 'run', '--json']));
      const r = await t.cli(['restore', '--source', String(b.path), '--json']);
      expectOk(r);
      const steps = json(r).steps as string[];
      expect(steps).toContain('postfix: stopped (no mail accepted during the restore)');
      expect(steps).toContain('postfix: started again');
      expect(steps.indexOf('postfix: stopped (no mail accepted during the restore)')).toBeLessThan(steps.findIndex((s) => s.startsWith('mail storage')));
      // Running again: `postfix status` exits 0.
      await execFileP('postfix', ['-c', postfix.configDir, 'status']);
      expect(postfix.logs()).toMatch(/stopping the Postfix mail system[\s\S]*starting the Postfix mail system/);
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
      await db.drop();
      await postfix.stop();
    }
  }, 120_000);
});
