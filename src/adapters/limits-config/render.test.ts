import { describe, expect, it } from 'vitest';
import { LIMITS, LIMIT_KEYS, limitDefaults, limitSetting, limitSpec, parseLimitValue } from '../../shared/limit-keys.js';
import type { LimitValues } from '../../shared/limit-keys.js';
import { SEND_RATE_WINDOWS, sendRateLimitKey } from '../../shared/send-rate.js';
import { postfixParams, readUclKey, renderDovecot, renderMainCf, renderRspamd, setMainCfParams, setUclKeys } from './render.js';

const DEFAULTS: LimitValues = Object.fromEntries(LIMITS.map((l) => [l.key, l.default]));
const spec = (key: string) => {
  const s = limitSpec(key);
  if (!s) throw new Error(key);
  return s;
};

describe('the limit keys, declared once', () => {
  it('are exactly the contract\'s keys; send-rate keys derive from the send-rate windows', () => {
    const jails = ['sshd', 'dovecot', 'postfix', 'postfix-sasl', 'nginx', 'mailsvc-auth', 'recidive'];
    expect([...LIMIT_KEYS].sort()).toEqual(
      [
        'message-size-limit', 'smtp-recipient-limit', 'postfix-client-connection-rate-limit',
        'send-rate-burst', 'send-rate-per-minute', 'send-rate-per-hour', 'send-rate-per-day', 'send-rate-per-week', 'send-rate-per-month',
        ...jails.flatMap((j) => ['maxretry', 'findtime', 'bantime'].map((w) => `fail2ban-${j}-${w}`)),
        'spam-score-add-header', 'spam-score-greylist', 'spam-score-reject', 'greylist-delay', 'greylist-expire',
        'dkim-key-bits', 'dkim-rotation-days', 'dkim-rotation-grace-days', 'stats-retention-days', 'backup-retention-days',
        'api-auth-fail-limit', 'api-auth-fail-window', 'api-auth-block-seconds',
      ].sort(),
    );
    expect(SEND_RATE_WINDOWS.map((w) => sendRateLimitKey(w.window)).every((k) => LIMIT_KEYS.includes(k))).toBe(true);
    expect(DEFAULTS['message-size-limit']).toBe(52_428_800);
    expect(limitSetting('fail2ban-postfix-sasl-bantime')).toBe('MAILSVC_FAIL2BAN_POSTFIX_SASL_BANTIME');
  });

  it('sizes: bytes or a binary suffix; durations: seconds or s/m/h/d/w; scores may have decimals; counts are whole', () => {
    const size = spec('message-size-limit');
    expect(parseLimitValue(size, '50M')).toBe(52_428_800);
    expect(parseLimitValue(size, '512k')).toBe(524_288);
    expect(parseLimitValue(size, '1G')).toBe(1_073_741_824);
    expect(parseLimitValue(size, 1_000_000)).toBe(1_000_000);
    expect(parseLimitValue(size, '2000000')).toBe(2_000_000);
    const ban = spec('fail2ban-sshd-bantime');
    expect(['30s', '10m', '4h', '1d', '1w', '45'].map((v) => parseLimitValue(ban, v))).toEqual([30, 600, 14_400, 86_400, 604_800, 45]);
    expect(parseLimitValue(spec('spam-score-reject'), '7.5')).toBe(7.5);
    expect(parseLimitValue(spec('spam-score-reject'), 7.5)).toBe(7.5);
    expect(parseLimitValue(spec('dkim-key-bits'), '4096')).toBe(4096);
  });

  it.each([
    ['message-size-limit', '50X'], ['message-size-limit', '3G'], ['message-size-limit', 1.5], ['message-size-limit', '-1'], ['message-size-limit', ''],
    ['fail2ban-sshd-bantime', '4y'], ['fail2ban-sshd-bantime', '0'], ['fail2ban-sshd-bantime', '1.5h'], ['greylist-delay', '2d'],
    ['smtp-recipient-limit', '1e3'], ['smtp-recipient-limit', 0], ['dkim-key-bits', 1500], ['spam-score-reject', 'NaN'],
    ['api-auth-fail-limit', true], ['api-auth-fail-limit', null], ['api-auth-fail-limit', '9'.repeat(40)], ['api-auth-fail-limit', Number.POSITIVE_INFINITY],
  ] as [string, unknown][])('%s refuses %j', (key, value) => {
    expect(() => parseLimitValue(spec(key), value)).toThrow(/must/);
  });

  it('defaults come from MAILSVC_<KEY>; a bad one is refused naming the setting', () => {
    const d = limitDefaults({ MAILSVC_MESSAGE_SIZE_LIMIT: '20M', MAILSVC_FAIL2BAN_RECIDIVE_BANTIME: '2w' }, (k, r) => new Error(`${k}: ${r}`));
    expect(d['message-size-limit']).toBe(20_971_520);
    expect(d['fail2ban-recidive-bantime']).toBe(1_209_600);
    expect(d['smtp-recipient-limit']).toBe(1000);
    expect(() => limitDefaults({ MAILSVC_GREYLIST_DELAY: 'soon' }, (k, r) => new Error(`${k}: ${r}`))).toThrow(/^MAILSVC_GREYLIST_DELAY: must be seconds/);
  });
});

describe('renders', () => {
  it('main.cf: postconf -e semantics — the line and its continuation lines replaced, other lines kept, missing ones appended', () => {
    const text = '# mine\nmyhostname = mx.example.org\nsmtpd_recipient_limit =\n    77\n  # a comment stays\nmessage_size_limitx = 1\n';
    expect(setMainCfParams(text, { smtpd_recipient_limit: '250', message_size_limit: '9' })).toBe(
      '# mine\nmyhostname = mx.example.org\nsmtpd_recipient_limit = 250\n  # a comment stays\nmessage_size_limitx = 1\nmessage_size_limit = 9\n',
    );
    expect(setMainCfParams('', { a: '1' })).toBe('a = 1\n');
  });

  it('Postfix: mailbox limits below the message size are raised with it; 0 (none) or larger ones are left alone', () => {
    const v = { ...DEFAULTS, 'message-size-limit': 60_000_000 };
    expect(postfixParams(v, { mailbox_size_limit: 51_200_000, virtual_mailbox_limit: 0 })).toEqual({
      message_size_limit: '60000000', smtpd_recipient_limit: '1000', smtpd_client_connection_rate_limit: '0', mailbox_size_limit: '60000000',
    });
    expect(renderMainCf('virtual_mailbox_limit = 99999999999\n', v, { mailbox_size_limit: 0, virtual_mailbox_limit: 99_999_999_999 })).toBe(
      'virtual_mailbox_limit = 99999999999\nmessage_size_limit = 60000000\nsmtpd_recipient_limit = 1000\nsmtpd_client_connection_rate_limit = 0\n',
    );
  });

  it('Rspamd: max_message equals the Postfix size limit; top-level keys only (a nested block keeps its own key)', () => {
    const current = { 'options.inc': 'dns {\n  max_message = 1;\n}\nmax_message = 5; # old\n', 'actions.conf': '', 'greylist.conf': 'expire = 2d;\n' };
    const out = renderRspamd(current, { ...DEFAULTS, 'message-size-limit': 1_048_576, 'spam-score-greylist': 3.5 });
    expect(out).toEqual({
      'options.inc': 'dns {\n  max_message = 1;\n}\nmax_message = 1048576;\n',
      'actions.conf': 'reject = 15;\nadd_header = 6;\ngreylist = 3.5;\n',
      'greylist.conf': 'expire = 86400s;\ntimeout = 300s;\n',
    });
    expect(readUclKey(out['options.inc'], 'max_message')).toBe('1048576');
    expect(readUclKey('x {\n  reject = 1;\n}\n', 'reject')).toBeNull();
    expect(readUclKey(setUclKeys('', { reject: '15' }), 'reject')).toBe('15');
  });

  it('Dovecot: quota_max_mail_size in the plugin section, the message size limit in bytes', () => {
    expect(renderDovecot({ ...DEFAULTS, 'message-size-limit': 2_097_152 })).toBe(
      '# Written by `mailsvc limits apply` from the limit message-size-limit; change it there.\nplugin {\n  quota_max_mail_size = 2097152\n}\n',
    );
  });

});
