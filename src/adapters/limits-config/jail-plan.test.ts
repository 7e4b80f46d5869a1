import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadJailSettings } from '../../config/jail-settings.js';
import { LIMITS } from '../../shared/limit-keys.js';
import type { LimitValues } from '../../shared/limit-keys.js';
import { fail2banLogTarget, renderJailPlan } from './jail-plan.js';

const DEFAULTS: LimitValues = Object.fromEntries(LIMITS.map((l) => [l.key, l.default]));

describe('the jails of limits apply (one file per jail, limits and enabling joined)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-jailplan-'));
    for (const f of ['mail.log', 'auth.log', 'nginx.log', 'f2b.log']) writeFileSync(join(dir, f), '');
    writeFileSync(join(dir, 'fail2ban.conf'), `[Definition]\nlogtarget = /var/log/fail2ban.log\n`);
    writeFileSync(join(dir, 'fail2ban.local'), `[Definition]\nlogtarget = ${join(dir, 'f2b.log')}\n`);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const text = (files: { path: string; content: string | Buffer }[], jail: string): string => String(files.find((f) => f.path.endsWith(`/jail.d/mailsvc-${jail}.local`))?.content);

  it('each jail file carries its three limits and bantime.increment; the mail jails read MAILSVC_MAIL_LOG when it exists', () => {
    const settings = loadJailSettings({ MAILSVC_MAIL_LOG: join(dir, 'mail.log'), MAILSVC_NGINX_ERROR_LOG: join(dir, 'nginx.log') });
    const files = renderJailPlan({ ...DEFAULTS, 'fail2ban-nginx-bantime': 7200, 'fail2ban-postfix-maxretry': 9 }, { settings, fail2banDir: dir, authLog: join(dir, 'auth.log') });
    expect(files).toHaveLength(7);
    expect(text(files, 'nginx')).toContain('[nginx-http-auth]\nenabled = true\n');
    expect(text(files, 'nginx')).toContain('bantime = 7200\nbantime.increment = true\n');
    expect(text(files, 'postfix')).toContain(`logpath = ${join(dir, 'mail.log')}\nmaxretry = 9\nfindtime = 600\nbantime = 3600\n`);
    expect(text(files, 'recidive')).toContain(`logpath = ${join(dir, 'f2b.log')}\nmaxretry = 5\nfindtime = 86400\nbantime = 604800\n`);
    expect(text(files, 'sshd')).toContain('backend = systemd');
    // No second file sets the same options: a later jail.d file would silently win.
    expect(files.every((f) => /\/jail\.d\/mailsvc-[a-z-]+\.local$/.test(f.path))).toBe(true);
  });

  it('without a mail log the mail jails read the journal; a jail not listed, or whose log is missing, is written disabled with the reason', () => {
    const settings = loadJailSettings({ MAILSVC_MAIL_LOG: join(dir, 'none.log'), MAILSVC_NGINX_ERROR_LOG: join(dir, 'no-nginx.log'), MAILSVC_FAIL2BAN_JAILS: 'sshd postfix dovecot nginx mailsvc-auth recidive', MAILSVC_FAIL2BAN_BANTIME_INCREMENT: 'no' });
    const files = renderJailPlan(DEFAULTS, { settings, fail2banDir: dir, authLog: join(dir, 'auth.log') });
    expect(text(files, 'postfix')).toMatch(/enabled = true\nbackend = systemd\n/);
    expect(text(files, 'postfix-sasl')).toMatch(/# Disabled: not listed in MAILSVC_FAIL2BAN_JAILS\n\[postfix-sasl\]\nenabled = false/);
    expect(text(files, 'nginx')).toMatch(/# Disabled: its log .*no-nginx\.log does not exist\n\[nginx-http-auth\]\nenabled = false/);
    expect(text(files, 'sshd')).toContain('bantime.increment = false');
  });

  it('MAILSVC_MAIL_LOG=journal (what stats collect accepts to force the journal) makes the mail jails read the journal', () => {
    const settings = loadJailSettings({ MAILSVC_MAIL_LOG: 'journal', MAILSVC_NGINX_ERROR_LOG: join(dir, 'nginx.log') });
    expect(settings.mailLog).toBe('journal');
    const files = renderJailPlan(DEFAULTS, { settings, fail2banDir: dir, authLog: join(dir, 'auth.log') });
    for (const jail of ['postfix', 'postfix-sasl', 'dovecot']) expect(text(files, jail)).toMatch(/enabled = true\nbackend = systemd\n/);
  });

  it('recidive is disabled when fail2ban logs to the journal, not a file', () => {
    writeFileSync(join(dir, 'fail2ban.local'), '[Definition]\nlogtarget = SYSTEMD-JOURNAL\n');
    expect(fail2banLogTarget(dir)).toBe('SYSTEMD-JOURNAL');
    const files = renderJailPlan(DEFAULTS, { settings: loadJailSettings({}), fail2banDir: dir, authLog: join(dir, 'auth.log') });
    expect(text(files, 'recidive')).toMatch(/# Disabled: fail2ban logs to SYSTEMD-JOURNAL.*\n\[recidive\]\nenabled = false/);
  });

  it('a jail name mailsvc does not manage is a settings error naming the key', () => {
    expect(() => loadJailSettings({ MAILSVC_FAIL2BAN_JAILS: 'sshd,exim' })).toThrow(/MAILSVC_FAIL2BAN_JAILS.*"exim"/);
    expect(() => loadJailSettings({ MAILSVC_MAIL_LOG: 'mail.log' })).toThrow(/MAILSVC_MAIL_LOG/);
  });
});
