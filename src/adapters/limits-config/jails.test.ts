import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyConfig, fail2banChecker, LocalFileHost } from '../../adapters/config-applier/index.js';
import { findProgram } from '../../../test/helpers/mail-daemons.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { JAILS, renderJails } from './jails.js';

// Both: a removed package leaves /etc/fail2ban behind (apt-get remove keeps its configuration).
const haveF2b = existsSync('/etc/fail2ban/fail2ban.conf') && findProgram('fail2ban-client') !== null;
if (!haveF2b) skipNotice('fail2ban-client with /etc/fail2ban', 'not installed (no fail2ban-client, or no /etc/fail2ban/fail2ban.conf)');

describe('renderJails', () => {
  it('is pure: one jail.d/mailsvc-<jail>.local per jail, thresholds only where given, nginx as nginx-http-auth', () => {
    const files = renderJails({ sshd: { maxretry: 3, findtime: 600, bantime: 14400, increment: true }, nginx: { maxretry: 7 } }, { configDir: '/x/f2b' });
    expect(files.map((f) => f.path)).toEqual(JAILS.map((j) => `/x/f2b/jail.d/mailsvc-${j}.local`));
    expect(renderJails({ sshd: { maxretry: 3, findtime: 600, bantime: 14400, increment: true }, nginx: { maxretry: 7 } }, { configDir: '/x/f2b' })).toEqual(files);
    const text = (j: string) => String(files.find((f) => f.path.endsWith(`mailsvc-${j}.local`))?.content);
    expect(text('sshd')).toMatch(/\[sshd\]\nenabled = true\nbackend = systemd\nmaxretry = 3\nfindtime = 600\nbantime = 14400\nbantime.increment = true\n$/);
    expect(text('nginx')).toContain('[nginx-http-auth]\n');
    expect(text('dovecot')).not.toMatch(/maxretry|bantime/);
    expect(text('postfix')).toContain('backend = systemd');
    const withLog = renderJails({}, { mailLog: '/var/log/postfix.log' });
    expect(String(withLog.find((f) => f.path.endsWith('mailsvc-postfix-sasl.local'))?.content)).toContain('logpath = /var/log/postfix.log');
  });

  it('refuses a value out of range, naming its limit key', () => {
    expect(() => renderJails({ recidive: { bantime: 0 } })).toThrow(/fail2ban-recidive-bantime/);
    expect(() => renderJails({ dovecot: { maxretry: 1.5 } })).toThrow(/fail2ban-dovecot-maxretry/);
  });
});

// The rendered files in a copy of /etc/fail2ban, through the config applier:
// fail2ban-client -t accepts them, and -d shows the thresholds fail2ban reads.
describe.skipIf(!haveF2b)('the rendered jails load in fail2ban (fail2ban-client -t, through the config applier)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-jails-'));
  const conf = join(dir, 'fail2ban');
  beforeAll(() => {
    cpSync('/etc/fail2ban', conf, { recursive: true });
    for (const f of readdirSync(join(conf, 'jail.d'))) rmSync(join(conf, 'jail.d', f), { recursive: true, force: true });
    cpSync(join(process.cwd(), 'deploy/fail2ban/filter.d/mailsvc-auth.conf'), join(conf, 'filter.d/mailsvc-auth.conf'));
    for (const f of ['mail.log', 'auth.log', 'f2b.log', 'nginx.log']) writeFileSync(join(dir, f), '');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('applies, passes the checker, and fail2ban reads maxretry/findtime/bantime and bantime.increment', async () => {
    const files = renderJails(
      { sshd: { maxretry: 4, findtime: 900, bantime: 7200, increment: true }, 'postfix-sasl': { maxretry: 2 }, recidive: { bantime: 604800 } },
      { configDir: conf, mailLog: join(dir, 'mail.log'), authLog: join(dir, 'auth.log'), fail2banLog: join(dir, 'f2b.log'), nginxErrorLog: join(dir, 'nginx.log') },
    );
    const r = await applyConfig([{ daemon: 'fail2ban', files, checker: fail2banChecker(conf), reload: false }], new LocalFileHost(), { reload: () => Promise.resolve() });
    expect(r.ok, JSON.stringify(r)).toBe(true);
    expect(readFileSync(join(conf, 'jail.d/mailsvc-sshd.local'), 'utf8')).toContain('maxretry = 4');
    const dump = execFileSync('fail2ban-client', ['-c', conf, '-d'], { encoding: 'utf8', timeout: 60_000 });
    for (const j of ['sshd', 'dovecot', 'postfix', 'postfix-sasl', 'nginx-http-auth', 'mailsvc-auth', 'recidive']) expect(dump).toContain(`['add', '${j}',`);
    const set = (jail: string, key: string, v: string): RegExp => new RegExp(`\\['set', '${jail}', '${key.replace('.', '\\.')}', '?${v}'?\\]`);
    expect(dump).toMatch(set('sshd', 'maxretry', '4'));
    expect(dump).toMatch(set('sshd', 'findtime', '900'));
    expect(dump).toMatch(set('sshd', 'bantime', '7200'));
    expect(dump).toMatch(set('sshd', 'bantime.increment', '(True|true|1)'));
    expect(dump).toMatch(set('postfix-sasl', 'maxretry', '2'));
    expect(dump).toMatch(set('recidive', 'bantime', '604800'));
  });

  it('a broken jail file is refused by the checker and nothing is written', async () => {
    const before = readFileSync(join(conf, 'jail.d/mailsvc-sshd.local'), 'utf8');
    const bad = [{ path: join(conf, 'jail.d/mailsvc-sshd.local'), content: '[sshd]\nenabled = true\nbackend = systemd\nfilter = no-such-filter\n', mode: 0o644 }];
    const r = await applyConfig([{ daemon: 'fail2ban', files: bad, checker: fail2banChecker(conf), reload: false }], new LocalFileHost(), { reload: () => Promise.resolve() });
    expect(r.ok).toBe(false);
    expect(readFileSync(join(conf, 'jail.d/mailsvc-sshd.local'), 'utf8')).toBe(before);
  });
});
