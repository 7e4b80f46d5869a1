import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findProgram } from '../../test/helpers/mail-daemons.js';
import { skipNotice } from '../../test/helpers/services.js';
import { SieveRulesError, checkSieveRules, renderSieveScript } from './sieve-rules.js';

// The rules a user sets, checked, and the script rendered from them compiled
// by Pigeonhole's own compiler (sievec, Debian package dovecot-sieve): text a
// user typed (quotes, backslashes, line breaks, a would-be second command)
// stays inside its string.
const OWNER = 'alice@example.org';
const sievec = findProgram('sievec');
const sieveTest = findProgram('sieve-test');
if (!sievec || !sieveTest) skipNotice('sievec and sieve-test (Debian package dovecot-sieve)', 'not found on PATH');

/** What Pigeonhole's sieve-test says the script does with a message from bob@example.net to Alice. */
function actions(script: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-sieve-test-'));
  try {
    chmodSync(dir, 0o777);
    mkdirSync(join(dir, 'mail'), { mode: 0o777 });
    chmodSync(join(dir, 'mail'), 0o777);
    writeFileSync(join(dir, 'dovecot.conf'), `mail_uid = nobody\nmail_gid = nogroup\nmail_location = maildir:${dir}/mail\nplugin {\n}\n`, { mode: 0o644 });
    writeFileSync(join(dir, 'portal.sieve'), script, { mode: 0o644 });
    writeFileSync(join(dir, 'message.eml'), 'From: bob@example.net\nTo: alice@example.org\nSubject: hi\n\nhello\n', { mode: 0o644 });
    return execFileSync(sieveTest ?? 'sieve-test', ['-c', join(dir, 'dovecot.conf'), '-a', OWNER, '-f', 'bob@example.net', join(dir, 'portal.sieve'), join(dir, 'message.eml')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function compiles(script: string): void {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-sievec-'));
  try {
    writeFileSync(join(dir, 'dovecot.conf'), 'plugin {\n}\n');
    writeFileSync(join(dir, 'portal.sieve'), script);
    execFileSync(sievec ?? 'sievec', ['-c', join(dir, 'dovecot.conf'), join(dir, 'portal.sieve'), join(dir, 'portal.svbin')], { stdio: 'pipe', timeout: 30_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const HOSTILE = 'Away "now" \\ ";\r\nredirect "evil@example.net"; #';

describe('self-service Sieve rules', () => {
  it('refuses what must not reach Dovecot, naming the field', () => {
    const bad: [unknown, RegExp][] = [
      [[], /rules must be an object/],
      [{ 'message-size-limit': 10 }, /rules takes only forward, vacation/],
      [{ forward: { to: 'bob@example.net', keepCopy: true, script: 'discard;' } }, /forward takes only to, keepCopy/],
      [{ forward: { to: 'not an address', keepCopy: true } }, /forward to must be an address/],
      [{ forward: { to: OWNER, keepCopy: false } }, /another address than the mailbox itself/],
      [{ vacation: { subject: 'a\nb', body: 'x', start: null, end: null, days: 7 } }, /subject/],
      [{ vacation: { subject: 's', body: 'x\u0000', start: null, end: null, days: 7 } }, /body/],
      [{ vacation: { subject: 's', body: 'x', start: '2030-02-30', end: null, days: 7 } }, /start must be a date/],
      [{ vacation: { subject: 's', body: 'x', start: '2030-02-10', end: '2030-02-01', days: 7 } }, /end must not be before/],
      [{ vacation: { subject: 's', body: 'x', start: null, end: null, days: 0 } }, /days/],
    ];
    for (const [rules, message] of bad) {
      expect(() => checkSieveRules(rules, OWNER)).toThrow(SieveRulesError);
      expect(() => checkSieveRules(rules, OWNER)).toThrow(message);
    }
  });

  it('renders forwarding with and without a copy, and a dated reply, as Pigeonhole compiles them', { skip: !sievec || !sieveTest }, () => {
    const withCopy = renderSieveScript(checkSieveRules({ forward: { to: 'Bob@Example.net', keepCopy: true } }, OWNER), OWNER);
    expect(withCopy).toContain('redirect :copy "bob@example.net";');
    compiles(withCopy);
    const moved = renderSieveScript(checkSieveRules({ forward: { to: 'bob@example.net', keepCopy: false } }, OWNER), OWNER);
    expect(moved).toMatch(/^redirect "bob@example\.net";$/m);
    compiles(moved);
    const movedDone = actions(moved);
    expect(movedDone).toMatch(/redirect message to: <bob@example\.net>/);
    expect(movedDone).toMatch(/Implicit keep:\s+\(none\)/);
    expect(actions(withCopy)).toMatch(/redirect message to: <bob@example\.net>[\s\S]*Implicit keep:\s+\* store message in folder: INBOX/);
    const both = renderSieveScript(checkSieveRules({ forward: { to: 'bob@example.net', keepCopy: false }, vacation: { subject: 'Away', body: 'Back\nsoon', start: '2030-01-01', end: '2030-01-31', days: 3 } }, OWNER), OWNER);
    expect(both.indexOf('vacation :days 3')).toBeLessThan(both.indexOf('redirect'));
    compiles(both);
    compiles(renderSieveScript({ forward: null, vacation: null }, OWNER));
  });

  it('a hostile subject and body stay text: one redirect at most, the script compiles', { skip: !sievec || !sieveTest }, () => {
    const script = renderSieveScript(checkSieveRules({ vacation: { subject: 'Away "now" \\ x', body: HOSTILE, start: null, end: null, days: 7 } }, OWNER), OWNER);
    compiles(script);
    const done = actions(script);
    expect(done).toContain('send vacation message');
    expect(done).not.toMatch(/^\s*\* redirect/m);
    expect(done).toMatch(/Implicit keep:\s+\* store message in folder: INBOX/);
  });
});
