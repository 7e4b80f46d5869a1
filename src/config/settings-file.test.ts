/**
 * Issue 21: `mailsvc admin set-password` (root) rewrote /etc/mailsvc/mailsvc.conf
 * as root:root 0600, and the service (user mailsvc, group-reader of the file)
 * could not start any more. The file keeps its owner, group and mode.
 */
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeSettingsKey } from './settings-file.js';

const isRoot = process.getuid?.() === 0;

describe('writeSettingsKey', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-settings-file-'));
  afterEach(() => rmSync(join(dir, 'mailsvc.conf'), { force: true }));

  it.skipIf(!isRoot)('keeps the owner, group and mode of the file it rewrites (root:<group> 0640 stays so)', () => {
    const file = join(dir, 'mailsvc.conf');
    writeFileSync(file, 'MAILSVC_API_PORT=8080\n', { mode: 0o640 });
    chownSync(file, 0, 65534);
    writeSettingsKey(file, 'MAILSVC_ADMIN_PASSWORD_HASH', '$argon2id$x');
    const st = statSync(file);
    expect({ uid: st.uid, gid: st.gid, mode: st.mode & 0o777 }).toEqual({ uid: 0, gid: 65534, mode: 0o640 });
    expect(readFileSync(file, 'utf8')).toBe('MAILSVC_API_PORT=8080\nMAILSVC_ADMIN_PASSWORD_HASH=$argon2id$x\n');
  });

  it('never widens a file to other users, and makes a new one 0600', () => {
    const file = join(dir, 'mailsvc.conf');
    writeSettingsKey(file, 'A', '1');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    writeFileSync(file, 'A=1\n');
    chmodSync(file, 0o666);
    writeSettingsKey(file, 'B', '2');
    expect(statSync(file).mode & 0o777).toBe(0o640);
  });
});
