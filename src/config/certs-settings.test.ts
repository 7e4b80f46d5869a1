import { describe, expect, it } from 'vitest';
import { loadCertsSettings } from './certs-settings.js';
import { SettingsError } from './settings-error.js';

describe('MAILSVC_CERTS_DEPLOY', () => {
  it('is helper unless files is asked for', () => {
    expect(loadCertsSettings({}, '/data').deploy).toBe('helper');
    expect(loadCertsSettings({ MAILSVC_CERTS_DEPLOY: '' }, '/data').deploy).toBe('helper');
    expect(loadCertsSettings({ MAILSVC_CERTS_DEPLOY: 'files' }, '/data').deploy).toBe('files');
  });

  it('anything else is refused, naming the setting and the values', () => {
    expect(() => loadCertsSettings({ MAILSVC_CERTS_DEPLOY: 'file' }, '/data')).toThrow(SettingsError);
    expect(() => loadCertsSettings({ MAILSVC_CERTS_DEPLOY: 'file' }, '/data')).toThrow(/MAILSVC_CERTS_DEPLOY.*helper, files/);
  });
});
