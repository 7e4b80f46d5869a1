import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildCli, expectOk, expectOneErrorLine, json, runCli } from '../../test/helpers/cli.js';
import { machineConfigMissing, skipNotice } from '../../test/helpers/services.js';

/** `mailsvc limits show|set|apply` as the built binary: stored values, drift read from Postfix, apply end to end. */
const havePostfix = (() => {
  try {
    execFileSync('postconf', ['-d', 'mail_version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!havePostfix) skipNotice('postfix (Debian package)', 'not installed');
// The test copies the machine's /etc/postfix (it writes its own main.cf): master.cf must be there.
const unconfigured = havePostfix ? machineConfigMissing(['/etc/postfix/master.cf']) : null;
if (unconfigured !== null) skipNotice("the machine's Postfix configuration", unconfigured);

let dirs: string[] = [];
beforeAll(() => {
  buildCli();
}, 120_000);
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

describe.skipIf(!havePostfix || unconfigured !== null)('mailsvc limits', () => {
  it('set stores (suffixes accepted), bad input exits 2 changing nothing, show flags drift from postconf, apply fixes it', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-limits-cli-'));
    dirs.push(dir);
    const postfix = join(dir, 'postfix');
    cpSync('/etc/postfix', postfix, { recursive: true, filter: (s) => !s.endsWith('/sasl') });
    writeFileSync(join(postfix, 'main.cf'), 'compatibility_level = 3.6\nmessage_size_limit = 10240000\n');
    const env = {
      MAILSVC_DATA_DIR: dir,
      MAILSVC_HELPER: 'direct',
      MAILSVC_POSTFIX_CONFIG_DIR: postfix,
      // Not present here: skipped.
      MAILSVC_RSPAMD_LOCAL_DIR: join(dir, 'no-rspamd/local.d'),
      MAILSVC_DOVECOT_CONFIG: join(dir, 'no-dovecot/dovecot.conf'),
      MAILSVC_FAIL2BAN_CONFIG_DIR: join(dir, 'no-fail2ban'),
      MAILSVC_FAIL2BAN_SOCKET: join(dir, 'no-fail2ban.sock'),
      MAILSVC_SMTP_RECIPIENT_LIMIT: '300',
    };
    const cli = (args: string[]) => runCli(args, { env, timeoutMs: 60_000 });
    expectOk(await cli(['db', 'migrate']));

    const set = await cli(['limits', 'set', 'message-size-limit', '20M', '--json']);
    expectOk(set);
    expect(json(set)['message-size-limit']).toBe(20 * 1024 * 1024);
    expect((await cli(['limits', 'set', 'greylist-delay', '10m'])).stdout).toMatch(/^greylist-delay = 600\. Run mailsvc limits apply to render it to rspamd\./);

    for (const [args, says] of [
      [['limits', 'set', 'no-such-limit', '5'], /no-such-limit/],
      [['limits', 'set', 'message-size-limit', '20X'], /message-size-limit must be bytes/],
      [['limits', 'set', 'fail2ban-sshd-maxretry', '0'], /fail2ban-sshd-maxretry must be from 1 to 1000/],
    ] as const) {
      const r = await cli([...args]);
      expect(r.code).toBe(2);
      expect(expectOneErrorLine(r)).toMatch(says);
    }

    // --json is the shape of GET /admin/limits (and of limits set --json): one object, byte for byte.
    const show = await cli(['limits', 'show', '--json']);
    expectOk(show);
    const values = JSON.parse(show.stdout) as Record<string, number>;
    expect(Array.isArray(values)).toBe(false);
    expect(values).toMatchObject({ 'message-size-limit': 20_971_520, 'smtp-recipient-limit': 300, 'greylist-delay': 600 });
    expect((await cli(['limits', 'set', 'greylist-delay', '600', '--json'])).stdout).toBe(show.stdout);
    const human = await cli(['limits', 'show']);
    expect(human.stdout).toMatch(/^message-size-limit\s+20971520\s+52428800\s+10240000\s+bytes\s+DRIFT$/m);
    expect(human.stdout).toMatch(/^smtp-recipient-limit\s+300\s+300\s+1000\s+\S+\s+DRIFT$/m);
    expect(human.stdout).toMatch(/^greylist-delay\s+600\s+300\s+-\s+\S+\s*$/m);

    const started = Date.now();
    const apply = await cli(['limits', 'apply', '--json']);
    const elapsed = Date.now() - started;
    expectOk(apply);
    console.log(`[measure] mailsvc limits apply --json, end to end (node start, DB, postfix check, skips): ${elapsed} ms`);
    const report = json(apply) as { daemons: { daemon: string; status: string; reloaded: boolean }[] };
    expect(report.daemons.map((d) => [d.daemon, d.status, d.reloaded])).toEqual([['postfix', 'changed', false], ['rspamd', 'skipped', false], ['dovecot', 'skipped', false], ['fail2ban', 'skipped', false]]);
    expect(readFileSync(join(postfix, 'main.cf'), 'utf8')).toContain('message_size_limit = 20971520\n');
    expect((await cli(['limits', 'show'])).stdout).not.toMatch(/DRIFT/);

    const audit = JSON.parse((await cli(['audit', 'list', '--json'])).stdout) as { action: string; result: string }[];
    expect(audit.map((a) => [a.action, a.result])).toEqual(
      expect.arrayContaining([['cli: limits apply', 'ok'], ['cli: limits set', 'ok'], ['cli: limits set', 'validation']]),
    );
  });
});
