import { describe, expect, it } from 'vitest';
import { loadHelperSettings } from './helper-settings.js';
import { SettingsError } from './settings-error.js';

describe('helper settings', () => {
  it('defaults: the socket at /run/mailsvc/helper.sock and Debian paths', () => {
    expect(loadHelperSettings({})).toEqual({
      endpoint: { mode: 'unix', path: '/run/mailsvc/helper.sock' },
      socketGroup: null,
      doveadm: 'doveadm',
      dovecotConfig: undefined,
      postfixConfigDir: '/etc/postfix',
      fail2banSocket: '/run/fail2ban/fail2ban.sock',
      fail2banConfigDir: '/etc/fail2ban',
      rspamdLocalDir: '/etc/rspamd/local.d',
      rspamdGroup: '_rspamd',
      postsrsdDefaults: '/etc/default/postsrsd',
      nftTable: 'inet mailsvc',
      serviceUnit: 'mailsvc.service',
      jails: {
        enabled: ['sshd', 'dovecot', 'postfix', 'postfix-sasl', 'nginx', 'mailsvc-auth', 'recidive'],
        bantimeIncrement: true,
        mailLog: '/var/log/mail.log',
        nginxErrorLog: '/var/log/nginx/error.log',
      },
      authLog: '/var/lib/mailsvc/auth.log',
      tlsDir: '/etc/mailsvc/tls',
      tlsGroup: 'ssl-cert',
      nginxConfig: '/etc/nginx/nginx.conf',
      nginxTlsSnippet: '/etc/nginx/snippets/mailsvc-tls.conf',
    });
  });

  it('MAILSVC_HELPER is unix:<absolute path> or direct', () => {
    expect(loadHelperSettings({ MAILSVC_HELPER: 'direct' }).endpoint).toEqual({ mode: 'direct' });
    expect(loadHelperSettings({ MAILSVC_HELPER: 'unix:/tmp/h.sock' }).endpoint).toEqual({ mode: 'unix', path: '/tmp/h.sock' });
    for (const bad of ['unix:relative.sock', '/run/mailsvc/helper.sock', 'tcp:127.0.0.1:1', 'sudo']) {
      expect(() => loadHelperSettings({ MAILSVC_HELPER: bad }), bad).toThrow(SettingsError);
    }
  });

  it('refuses a sudo prefix in MAILSVC_DOVEADM and relative daemon paths', () => {
    expect(() => loadHelperSettings({ MAILSVC_DOVEADM: 'sudo -n /usr/bin/doveadm' })).toThrow(/mailsvc-helper/);
    expect(() => loadHelperSettings({ MAILSVC_POSTFIX_CONFIG_DIR: 'etc/postfix' })).toThrow(/MAILSVC_POSTFIX_CONFIG_DIR/);
    expect(() => loadHelperSettings({ MAILSVC_HELPER_SOCKET_GROUP: 'no-such-group-here' })).toThrow(/MAILSVC_HELPER_SOCKET_GROUP/);
    expect(loadHelperSettings({ MAILSVC_HELPER_SOCKET_GROUP: '0' }).socketGroup).toBe(0);
  });
});
