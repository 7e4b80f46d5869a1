import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exchange, request, startHelperProcess } from '../../test/helpers/helper-process.js';
import type { HelperProcess } from '../../test/helpers/helper-process.js';
import { skipNotice } from '../../test/helpers/services.js';
import { findProgram } from '../../test/helpers/mail-daemons.js';

// One rule for an absent daemon: the helper answers `unavailable` (the service's
// 503 / exit 69) with a fixed line saying what to install or start; a program
// that ran and failed stays `failed`. The real helper process, over its socket.

/**
 * One request on a connection of its own. A connection that closed before any answer (seen once in a loaded CI
 * run, 12 ms after the helper had answered its socket check) is asked again: this file is about what the answer
 * says, and an answer is always sent to a connection the helper admits.
 */
const ask = async (h: HelperProcess, action: string, args: string[]): Promise<Record<string, unknown>> => {
  for (let attempt = 0; ; attempt += 1) {
    const r = await exchange(h.socket, request(1, action, args), 1, 30_000);
    const answer = r.answers[0];
    if (answer !== undefined || attempt >= 5) return answer ?? {};
    await new Promise((resolve) => setTimeout(resolve, 200 * (attempt + 1)));
  }
};
const FIREWALL_STATE = JSON.stringify({ 'firewall-enabled': 'yes', 'firewall-rules-json': [{ ports: '22', protocol: 'tcp', source: '', enabled: 'yes' }] });

describe('the helper with no daemon program on its PATH', () => {
  let h: HelperProcess;
  let bin: string;
  beforeAll(async () => {
    bin = mkdtempSync(join(tmpdir(), 'mailsvc-empty-bin-'));
    h = await startHelperProcess({ fakes: false, env: { PATH: bin } });
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
    rmSync(bin, { recursive: true, force: true });
  });

  const cases: [string, string[], RegExp][] = [
    ['f2b-status', [], /^fail2ban is not installed here \(no fail2ban-client on the PATH\): apt-get install fail2ban$/],
    ['f2b-ban', ['sshd', '203.0.113.5'], /^fail2ban is not installed here .*apt-get install fail2ban$/],
    ['postsuper-hold', ['4B0A6210E3F'], /^Postfix is not installed here \(no postsuper on the PATH\): apt-get install postfix$/],
    ['postfix-status', [], /^Postfix is not installed here \(no postfix on the PATH\): apt-get install postfix$/],
    ['nft-list-ruleset', [], /^nftables is not installed here \(no nft on the PATH\): apt-get install nftables$/],
    ['firewall-apply', [FIREWALL_STATE], /^nftables is not installed here \(no nft on the PATH\): apt-get install nftables; the running ruleset is unchanged$/],
    ['doveadm-kick', ['alice@example.org'], /^Dovecot is not installed here \(no doveadm on the PATH\): apt-get install dovecot-core$/],
  ];
  for (const [action, args, line] of cases) {
    it(`${action}: unavailable, not installed, what to install`, async () => {
      const a = await ask(h, action, args);
      expect(a, JSON.stringify(a)).toMatchObject({ ok: false, error: 'unavailable', exec: { kind: 'not-found' } });
      expect(String(a.detail)).toMatch(line);
    });
  }
});

const f2b = findProgram('fail2ban-client');
if (!f2b) skipNotice('fail2ban-client', 'not installed');
const postsuper = findProgram('postsuper');
if (!postsuper) skipNotice('Postfix (postsuper)', 'not installed');

describe('the helper with the real programs, the daemon absent', () => {
  let h: HelperProcess;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-absent-'));
    mkdirSync(join(dir, 'postfix'));
    h = await startHelperProcess({ fakes: false, env: { MAILSVC_FAIL2BAN_SOCKET: join(dir, 'none', 'fail2ban.sock'), MAILSVC_POSTFIX_CONFIG_DIR: join(dir, 'postfix') } });
  }, 60_000);
  afterAll(async () => {
    await h?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.skipIf(!f2b)('fail2ban without its socket: unavailable, "not running (no socket at …)", how to start it', async () => {
    for (const [action, args] of [['f2b-status', []], ['f2b-banned', ['203.0.113.5']], ['f2b-ban', ['sshd', '203.0.113.5']], ['reload', ['fail2ban']]] as [string, string[]][]) {
      const a = await ask(h, action, args);
      expect(a, action).toMatchObject({ ok: false, error: 'unavailable', exec: { kind: 'exit' } });
      expect(a.detail).toBe(`fail2ban is not running (no socket at ${join(dir, 'none', 'fail2ban.sock')}): start it with systemctl start fail2ban`);
    }
  });

  it.skipIf(!postsuper)('Postfix without main.cf: unavailable, "not set up (no main.cf in …)", how to install it', async () => {
    for (const [action, args] of [['postsuper-hold', ['4B0A6210E3F']], ['postsuper-delete', ['4B0A6210E3F']], ['postfix-status', []], ['reload', ['postfix']]] as [string, string[]][]) {
      const a = await ask(h, action, args);
      expect(a, action).toMatchObject({ ok: false, error: 'unavailable' });
      expect(String(a.detail), action).toBe(`Postfix is not set up here (no main.cf in ${join(dir, 'postfix')}): apt-get install postfix, or set MAILSVC_POSTFIX_CONFIG_DIR to its configuration directory`);
    }
  });
});
