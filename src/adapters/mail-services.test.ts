import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MailServicesError, parseDovecotListeners, parseMasterCf, readMailServices } from './mail-services.js';

/** The reading of Postfix's master.cf and Dovecot's listeners: what the autoconfiguration and the SRV records tell clients. */
describe('mail services from the daemons\' configuration', () => {
  it('master.cf: SASL submission services only, by TLS mode, implicit TLS first; comments, continuation lines and host:port names as Postfix reads them', () => {
    const text = [
      '# Debian\'s master.cf, abridged',
      'smtp      inet  n       -       y       -       -       smtpd',
      '#submission inet n       -       y       -       -       smtpd',
      '#  -o smtpd_sasl_auth_enable=yes',
      '127.0.0.1:2587 inet n - n - - smtpd',
      '  -o smtpd_tls_security_level=encrypt',
      '  # a comment between the options',
      '  -o smtpd_sasl_auth_enable=yes',
      'submissions inet n - n - - smtpd -o smtpd_tls_wrappermode=yes -o smtpd_sasl_auth_enable=yes',
      '10025 inet n - n - - smtpd -o smtpd_sasl_auth_enable=yes',
      'pickup    unix  n       -       y       60      1       pickup',
    ].join('\n');
    // The last smtpd allows plain text: never offered to clients.
    expect(parseMasterCf(text)).toEqual([
      { protocol: 'submission', port: 465, security: 'tls' },
      { protocol: 'submission', port: 2587, security: 'starttls' },
    ]);
    expect(() => parseMasterCf('mystery inet n - n - - smtpd -o smtpd_sasl_auth_enable=yes -o smtpd_tls_wrappermode=yes')).toThrow(MailServicesError);
  });

  it('Dovecot: IMAP and POP3 listeners, ssl = yes is implicit TLS, port 0 is off, a later block wins', () => {
    const text = `
service imap-login {
  inet_listener imap {
    port = 143
  }
  inet_listener imaps {
    port = 993 # the usual
    ssl = yes
  }
}
service pop3-login {
  inet_listener pop3s {
    port = 995
    ssl = yes
  }
}
service imap-login {
  inet_listener imap {
    port = 0
  }
}
`;
    expect(parseDovecotListeners(text)).toEqual({
      imap: [{ protocol: 'imap', port: 993, security: 'tls' }],
      pop3: [{ protocol: 'pop3', port: 995, security: 'tls' }],
    });
    expect(() => parseDovecotListeners('service imap-login {\n  inet_listener imap {\n  }\n}')).toThrow(/needs a port/);
    expect(() => parseDovecotListeners('service imap-login {\n')).toThrow(/not closed/);
  });

  it('reading: a missing file or one with nothing to offer is an error naming the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mailsvc-services-'));
    try {
      const master = join(dir, 'master.cf');
      const dovecot = join(dir, 'listeners.conf');
      writeFileSync(master, 'smtp inet n - y - - smtpd\n');
      writeFileSync(dovecot, 'service imap-login {\n  inet_listener imaps {\n    port = 993\n    ssl = yes\n  }\n}\n');
      await expect(readMailServices({ postfixMasterCf: master, dovecotListeners: dovecot })).rejects.toThrow(`${master} has no submission service`);
      await expect(readMailServices({ postfixMasterCf: join(dir, 'none'), dovecotListeners: dovecot })).rejects.toThrow(/cannot read .*none: ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
