/**
 * `mailsvc install` wires each mail daemon (docs/install.md, Wiring the mail
 * daemons), tried on a temp copy of the Debian package's configuration with
 * the daemon's real checker: wired once, then "already wired" with nothing
 * written or reloaded; --dry-run prints diffs and changes nothing. Host steps
 * and reloads are recorded doubles (test/helpers/wiring-host.ts).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { snapshotTree } from '../../../../test/helpers/fs-snapshot.js';
import { skipNotice } from '../../../../test/helpers/services.js';
import { recordingReloader, wiringInput, wiringRoot, wiringUnavailable } from '../../../../test/helpers/wiring-host.js';
import { wireDaemons, WIRED_DAEMONS } from './index.js';
import type { WiredDaemon, WiringInput } from './index.js';

const available = WIRED_DAEMONS.filter((d) => {
  const why = wiringUnavailable(d);
  if (why) skipNotice(`wiring ${d}`, why);
  return why === null;
});

/** What a wired copy must hold, per daemon, checked with the daemon's own tools where it has them. */
const expectWired: Record<WiredDaemon, (p: WiringInput['ctx']['paths']) => void> = {
  postfix: (p) => {
    const get = (k: string): string => execFileSync('postconf', ['-c', p.postfixDir, '-x', '-h', k], { encoding: 'utf8' }).trim();
    // SQLite: Postfix asks mailsvc's socketmap server (it cannot open the database: its daemons drop supplementary groups).
    expect(execFileSync('postconf', ['-c', p.postfixDir, '-n', 'mailsvc_db'], { encoding: 'utf8' }).trim()).toBe('');
    const maps = `proxy:socketmap:unix:${p.postfixSpool}/mailsvc/maps`;
    expect(get('virtual_mailbox_domains')).toBe(`${maps}:domains`);
    expect(get('virtual_mailbox_maps')).toBe(`${maps}:mailboxes`);
    expect(get('virtual_alias_maps')).toBe(`${maps}:alias-mailboxes, ${maps}:aliases`);
    expect(get('smtpd_sender_login_maps')).toBe(`${maps}:sender-logins`);
    expect(execFileSync('cat', [p.settingsFile], { encoding: 'utf8' })).toMatch(new RegExp(`^MAILSVC_MAPS_LISTEN=unix:${p.postfixSpool}/mailsvc/maps$`, 'm'));
    expect(get('smtpd_sasl_path')).toBe('private/auth');
    expect(get('smtpd_end_of_data_restrictions')).toMatch(/^check_policy_service \{ unix:mailsvc\/policy,/);
    expect(get('smtpd_milters')).toBe('inet:127.0.0.1:11332');
    expect(get('sender_canonical_maps')).toBe('tcp:127.0.0.1:10001');
    const master = execFileSync('postconf', ['-c', p.postfixDir, '-P'], { encoding: 'utf8' });
    expect(master).toContain('submission/inet/smtpd_sasl_auth_enable = yes');
    expect(master).toContain('submissions/inet/smtpd_tls_wrappermode = yes');
    expect(execFileSync('postconf', ['-c', p.postfixDir, '-M', 'submission/inet'], { encoding: 'utf8' })).toMatch(/^submission\s+inet\s+n\s+-\s+n\s+-\s+-\s+smtpd/);
    expect(existsSync(join(p.postfixDir, 'mailsvc/sqlite'))).toBe(false);
  },
  dovecot: (p) => {
    const conf = execFileSync('doveconf', ['-c', p.dovecotConf, '-n'], { encoding: 'utf8' });
    expect(conf).toMatch(/passdb \{\s+args = file=\/etc\/dovecot\/mailsvc-auth\.lua blocking=yes\s+driver = lua/);
    expect(conf).toMatch(/userdb \{\s+default_fields = [^\n]*\n\s+driver = prefetch/);
    expect(conf).toMatch(/service auth-worker \{\s+extra_groups = mailsvc\s+user = \$default_internal_user/);
    expect(conf).toContain(`unix_listener ${p.postfixSpool}/private/dovecot-lmtp`);
    expect(conf).not.toMatch(/driver = pam/);
  },
  rspamd: (p) => expect(execFileSync('cat', [join(p.rspamdLocalDir, 'worker-proxy.inc')], { encoding: 'utf8' })).toMatch(/^milter = yes;$/m),
  nginx: (p) => {
    const site = execFileSync('cat', [join(p.nginxConf, '..', 'sites-enabled', 'mailsvc.conf')], { encoding: 'utf8' });
    expect(site).toMatch(/server_name mail\.example\.test;/);
    expect(site).toContain('location /.well-known/acme-challenge/ { root /var/www/mailsvc-acme; }');
    expect(execFileSync('cat', [join(p.nginxConf, '..', 'snippets', 'mailsvc-tls.conf')], { encoding: 'utf8' })).toContain(`ssl_certificate ${p.snakeoil.cert};`);
    // The API behind this nginx takes the client's address from its X-Forwarded-For.
    expect(execFileSync('cat', [p.settingsFile], { encoding: 'utf8' })).toMatch(/^MAILSVC_TRUSTED_PROXIES=127\.0\.0\.1,::1$/m);
  },
  fail2ban: (p) => {
    expect(execFileSync('cat', [join(p.fail2banDir, 'jail.d', '00-mailsvc-defaults.local')], { encoding: 'utf8' })).toMatch(/banaction = nftables-multiport[\s\S]*\[sshd\]\nbackend = systemd/);
    const jails = execFileSync('fail2ban-client', ['-c', p.fail2banDir, '-d'], { encoding: 'utf8' });
    expect(jails).toContain("['add', 'mailsvc-auth', 'auto']");
    expect(jails).toMatch(/\['set', 'sshd', 'addaction', 'nftables'\]|nftables-multiport|'nftables'/);
  },
  postsrsd: (p) => expect(execFileSync('sh', ['-c', '. "$1" && echo "$SRS_DOMAIN"', 'sh', p.postsrsdDefaults], { encoding: 'utf8' }).trim()).toBe('srs.example.net'),
  nftables: (p) => {
    const text = execFileSync('cat', [p.nftablesConf], { encoding: 'utf8' });
    expect(text).not.toMatch(/^flush ruleset/m);
    expect(text).toMatch(/^table inet filter\ndelete table inet filter$/m);
  },
};

/** A change to the copy that the daemon's own checker refuses, once mailsvc's files are laid over it (none for Postfix: postfix check passes what postconf writes). */
const breakIt: Partial<Record<WiredDaemon, (p: WiringInput['ctx']['paths']) => void>> = {
  dovecot: (p) => writeFileSync(join(p.dovecotConf, '..', 'conf.d', '99-broken.conf'), 'no_such_setting = 1\n'),
  nginx: (p) => writeFileSync(join(p.nginxConf, '..', 'conf.d', 'broken.conf'), 'no_such_directive on;\n'),
  fail2ban: (p) => writeFileSync(join(p.fail2banDir, 'jail.d', 'broken.local'), '[no-such-jail]\nenabled = true\nfilter = no-such-filter\nlogpath = /dev/null\n'),
  rspamd: (p) => writeFileSync(join(p.rspamdLocalDir, 'options.inc'), 'dns {{{\n'),
  postsrsd: (p) => writeFileSync(p.postsrsdDefaults, 'if then\n', { flag: 'a' }),
  nftables: (p) => writeFileSync(p.nftablesConf, 'table inet broken { chain c { no such thing } }\n', { flag: 'a' }),
};

describe.each(available)('install wires %s', (daemon) => {
  let dir: string;
  let paths: WiringInput['ctx']['paths'];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), `mailsvc-wiring-${daemon}-`));
    paths = wiringRoot(dir);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  // Postfix's wiring depends on which others are wired (the milter, SRS): all of them, as on a full host.
  const only = daemon === 'postfix' ? [...WIRED_DAEMONS] : [daemon];
  const mine = (r: Awaited<ReturnType<typeof wireDaemons>>) => r.daemons.find((o) => o.daemon === daemon);

  it('--dry-run shows a diff per file and changes nothing: no file, no host step, no reload', async () => {
    const before = snapshotTree(dir);
    const { input, host, reloader } = wiringInput(paths, { only: [daemon], dryRun: true });
    const r = await wireDaemons(input);
    expect(mine(r)).toMatchObject({ status: 'would wire' });
    expect(mine(r)?.diffs?.length).toBeGreaterThan(0);
    expect(mine(r)?.diffs?.[0]?.diff).toMatch(/^--- .*\n\+\+\+ /);
    expect(snapshotTree(dir)).toEqual(before);
    expect(host.log).toEqual([]);
    expect(reloader.reloads).toEqual([]);
  }, 120_000);

  it('wires it through its checker and reloads it once; a second run finds it wired and changes nothing', async () => {
    const first = wiringInput(paths, { only });
    const r = await wireDaemons(first.input);
    expect(mine(r), JSON.stringify(mine(r))).toMatchObject({ status: 'wired' });
    expect(first.reloader.reloads).toContain(daemon);
    expectWired[daemon](paths);
    const after = snapshotTree(dir);
    // The same host (its steps are done now, as on a real host) and a new reloader.
    const reloader = recordingReloader();
    const input = { ...first.input, reloader };
    const r2 = await wireDaemons(input);
    expect(mine(r2)).toMatchObject({ status: 'already wired', changes: [] });
    expect(reloader.reloads).toEqual([]);
    expect(snapshotTree(dir)).toEqual(after);
    const dry = await wireDaemons({ ...input, dryRun: true });
    expect(mine(dry)).toMatchObject({ status: 'already wired', diffs: [] });
  }, 180_000);

  it('--no-wire leaves it alone; a daemon not installed is reported so, and nothing is written', async () => {
    const before = snapshotTree(dir);
    const left = await wireDaemons(wiringInput(paths, { only: [daemon], noWire: [daemon] }).input);
    expect(mine(left)).toMatchObject({ status: 'left alone', changes: [] });
    const absent = await wireDaemons(wiringInput(paths, { only: [] }).input);
    expect(mine(absent)).toMatchObject({ status: 'not installed', changes: [] });
    expect(snapshotTree(dir)).toEqual(before);
  }, 60_000);

  it('a failed reload puts every file back byte for byte and reloads it again on the old files', async () => {
    const before = snapshotTree(dir);
    const { input, reloader } = wiringInput(paths, { only: [daemon], failing: [daemon] });
    const r = await wireDaemons(input);
    expect(mine(r)).toMatchObject({ status: 'failed' });
    expect(mine(r)?.detail).toMatch(/refused to reload; its files are as they were/);
    expect(reloader.reloads.filter((d) => d === daemon)).toEqual([daemon, daemon]);
    const now = snapshotTree(dir);
    for (const [path, content] of before) if (!path.includes('mailsvc.conf')) expect(now.get(path), path).toBe(content);
  }, 180_000);

  it.skipIf(breakIt[daemon] === undefined)('a configuration its checker refuses: nothing is written, nothing reloaded, the failure says why', async () => {
    breakIt[daemon]?.(paths);
    const before = snapshotTree(dir);
    const { input, reloader } = wiringInput(paths, { only: [daemon] });
    const r = await wireDaemons(input);
    expect(mine(r)).toMatchObject({ status: 'failed' });
    expect(mine(r)?.detail).toMatch(/refused the new configuration: .*; its files are as they were$/s);
    expect(reloader.reloads).toEqual([]);
    const now = snapshotTree(dir);
    for (const [path, content] of before) expect(now.get(path), path).toBe(content);
  }, 120_000);
});
