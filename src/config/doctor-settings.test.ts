import { describe, expect, it } from 'vitest';
import { loadDoctorSettings, parseTlsPorts } from './doctor-settings.js';
import { SettingsError } from './settings-error.js';

describe('doctor and TLS proof settings', () => {
  it('defaults: 5 s per check, 5 s settle window for a deploy\'s proof, the six standard ports', () => {
    const s = loadDoctorSettings({ MAILSVC_DOCTOR_TLS_NAME: 'mail.example.org' });
    expect(s).toMatchObject({ timeoutMs: 5000, tlsSettleMs: 5000, tlsHost: '127.0.0.1', tlsName: 'mail.example.org' });
    expect(s.tlsPorts.map((p) => `${p.kind}:${p.port}`)).toEqual(['smtp:25', 'submission:587', 'smtps:465', 'imaps:993', 'pop3s:995', 'https:443']);
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
