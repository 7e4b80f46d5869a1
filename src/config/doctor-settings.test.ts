import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadDoctorSettings, parseTlsPorts } from './doctor-settings.js';
import { SettingsError } from './settings-error.js';

describe('doctor and TLS proof settings', () => {
  it('defaults: 5 s per check, 5 s settle window for a deploy\'s proof; without listener files the ports of mailsvc\'s own set-up (no POP3)', () => {
    const s = loadDoctorSettings({ MAILSVC_DOCTOR_TLS_NAME: 'mail.example.org' });
    expect(s).toMatchObject({ timeoutMs: 5000, tlsSettleMs: 5000, tlsHost: '127.0.0.1', tlsName: 'mail.example.org' });
    expect(s.tlsPorts.map((p) => `${p.kind}:${p.port}`)).toEqual(['smtp:25', 'submission:587', 'smtps:465', 'imaps:993', 'https:443']);
  });

  it('the default ports are the ones the installed listeners offer, as autoconfiguration reads them: POP3 switched off (port = 0) is not checked', () => {
    const deploy = join(import.meta.dirname, '..', '..', 'deploy');
    const shipped = { postfixMasterCf: join(deploy, 'postfix', 'master.cf.submission'), dovecotListeners: join(deploy, 'dovecot', 'conf.d', '13-mailsvc-listeners.conf') };
    const ports = (files: typeof shipped, env: Record<string, string> = {}) => loadDoctorSettings({ MAILSVC_DOCTOR_TLS_NAME: 'm.example', ...env }, files).tlsPorts.map((p) => `${p.kind}:${p.port}`);
    expect(ports(shipped)).toEqual(['smtp:25', 'smtps:465', 'submission:587', 'imaps:993', 'imap:143', 'https:443']);
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-doctor-ports-'));
    try {
      // The same file with POP3 over TLS switched on: then it is checked.
      const withPop3 = join(dir, 'listeners.conf');
      writeFileSync(withPop3, readFileSync(shipped.dovecotListeners, 'utf8').replace(/inet_listener pop3s \{\s*port = 0\s*\}/, 'inet_listener pop3s {\n    port = 995\n    ssl = yes\n  }'));
      expect(ports({ ...shipped, dovecotListeners: withPop3 })).toContain('pop3s:995');
      // A file that cannot be read: mailsvc's own set-up, still without POP3.
      expect(ports({ ...shipped, dovecotListeners: join(dir, 'missing.conf') })).toEqual(['smtp:25', 'submission:587', 'smtps:465', 'imaps:993', 'https:443']);
      // The setting given wins over the files.
      expect(ports(shipped, { MAILSVC_DOCTOR_TLS_PORTS: 'pop3s:995' })).toEqual(['pop3s:995']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('MAILSVC_TLS_SETTLE_MS: a whole number of milliseconds from 500 to 120000, anything else named in the error', () => {
    expect(loadDoctorSettings({ MAILSVC_DOCTOR_TLS_NAME: 'm.example', MAILSVC_TLS_SETTLE_MS: '20000' }).tlsSettleMs).toBe(20_000);
    for (const bad of ['499', '120001', '5s', '-1', '1e4']) {
      expect(() => loadDoctorSettings({ MAILSVC_DOCTOR_TLS_NAME: 'm.example', MAILSVC_TLS_SETTLE_MS: bad }), bad).toThrow(SettingsError);
      expect(() => loadDoctorSettings({ MAILSVC_DOCTOR_TLS_NAME: 'm.example', MAILSVC_TLS_SETTLE_MS: bad }), bad).toThrow(/MAILSVC_TLS_SETTLE_MS/);
    }
  });

  it('MAILSVC_DOCTOR_TLS_PORTS: off is none; an unknown kind or port is refused', () => {
    expect(parseTlsPorts('off')).toEqual([]);
    expect(parseTlsPorts('imap:143, pop3:110')).toEqual([{ kind: 'imap', port: 143 }, { kind: 'pop3', port: 110 }]);
    expect(() => parseTlsPorts('ftp:21')).toThrow(/MAILSVC_DOCTOR_TLS_PORTS/);
    expect(() => parseTlsPorts('smtp:0')).toThrow(SettingsError);
  });
});
