/**
 * Issue 21, the mail daemons and the host operations on a real install: the
 * release installed on a Debian 12 guest under systemd (test/helpers/
 * installed-guest.ts), Postfix, Dovecot, Rspamd, fail2ban and nftables wired
 * by `mailsvc install` itself, and postsrsd by running it again once SRS is
 * switched on (docs/install.md, Wiring the mail daemons; no shell step). Then a login and a submission through
 * mailsvc's Dovecot hook and Postfix policy service (their Unix sockets), and
 * every host operation through the socket-activated root helper, each seen in
 * its daemon: the queue in `postqueue -j`, bans in fail2ban and nftables, the
 * firewall in `nft list ruleset`, limits in `postconf` and fail2ban, DKIM
 * signing by Rspamd, SRS by postsrsd.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, API } from './helpers/guest-api.js';
import { installedGuest, installedGuestUnavailable, until, type InstalledGuest } from './helpers/installed-guest.js';
import type { Guest } from './helpers/nspawn.js';
import { skipNotice } from './helpers/services.js';

const { missing, lower } = installedGuestUnavailable();
if (missing) skipNotice('a Debian 12 guest under systemd-nspawn', missing);

const DOMAIN = 'example.org';
const ALICE = `alice@${DOMAIN}`;
const ALICE_PASSWORD = 'alice has a long password';
const SRS_DOMAIN = 'srs.example.net';
/** The administrator's address as the trusted proxy (nginx, docs/install.md) forwards it. */
const ADMIN_IP = '198.51.100.20';

type Wiring = { daemons: { daemon: string; status: string; changes: string[]; detail?: string }[] };
/** Each daemon's status in `mailsvc install --json`'s report. */
const statuses = (out: string): Record<string, string> => Object.fromEntries((JSON.parse(out) as { wiring: Wiring }).wiring.daemons.map((d) => [d.daemon, d.status]));

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));


describe.skipIf(missing !== null)('installed host: the mail daemons wired by mailsvc install, every host operation through the helper', () => {
  let ig: InstalledGuest;
  let guest: Guest;
  let bearer = '';
  let selector = '';
  let appPassword = '';
  let queueId = '';
  let dryRun: Record<string, string> = {};
  let dryUnchanged = false;
  let secondRun: Record<string, string> = {};

  const sh = (script: string, timeoutMs = 120_000): Promise<string> => guest.sh(script, { timeoutMs });
  const call = (method: string, path: string, body?: unknown) => api(guest, method, path, bearer, body);
  /** The API through the trusted proxy, as the administrator at ADMIN_IP. */
  const viaProxy = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> => {
    const args = ['curl', '-sS', '-X', method, '-w', '\n%{http_code}', '--max-time', '60', '-H', `authorization: ${bearer}`, '-H', `x-forwarded-for: ${ADMIN_IP}`, '-H', 'x-forwarded-proto: https'];
    if (body !== undefined) args.push('-H', 'content-type: application/json', '--data-binary', '@-');
    const r = await guest.run([...args, `${API}${path}`], body === undefined ? {} : { input: JSON.stringify(body) });
    const nl = r.stdout.lastIndexOf('\n');
    const text = r.stdout.slice(0, nl);
    return { status: Number(r.stdout.slice(nl + 1)), body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  };
  const journal = async (): Promise<string> => (await guest.run(['journalctl', '-u', 'mailsvc', '-u', 'mailsvc-helper', '--no-pager', '-n', '30', '-o', 'cat'])).stdout;
  const postqueue = async (): Promise<{ queue_id: string; queue_name: string }[]> =>
    (await sh('postqueue -j')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { queue_id: string; queue_name: string });
  const nftMailsvc = async (): Promise<string> => (await guest.run(['nft', 'list', 'table', 'inet', 'mailsvc'])).stdout;
  const message = (subject: string): string => `From: ${ALICE}\r\nTo: bob@remote.test\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@${DOMAIN}>\r\nDate: ${new Date().toUTCString()}\r\n\r\nHello from the installed host.\r\n`;
  const submit = (subject: string, password: string) =>
    guest.run(['curl', '-v', '--max-time', '60', '--ssl-reqd', '-k', 'smtp://127.0.0.1:587', '--mail-from', ALICE, '--mail-rcpt', 'bob@remote.test', '-u', `${ALICE}:${password}`, '-T', '-'], { input: message(subject), timeoutMs: 90_000 });

  beforeAll(async () => {
    ig = await installedGuest(lower, 'installed-ops');
    guest = ig.guest;
    bearer = ig.bearer;
    // This host is reached through nginx on loopback (docs/install.md, nginx), and a
    // forced firewall change waits 20 s for its confirmation here, not 120 s. SRS switched
    // on after the first install: postsrsd is wired by running install again.
    await sh(`printf 'MAILSVC_TRUSTED_PROXIES=127.0.0.1\\nMAILSVC_FIREWALL_REVERT_SECONDS=20\\nMAILSVC_ENABLE_SRS=yes\\nMAILSVC_SRS_DOMAIN=${SRS_DOMAIN}\\n' >> /etc/mailsvc/mailsvc.conf`);
    const etc = async (): Promise<string> => sh('cd /etc && cat postfix/main.cf postfix/master.cf default/postsrsd dovecot/conf.d/*.conf nftables.conf fail2ban/jail.d/* mailsvc/mailsvc.conf | sha256sum');
    const before = await etc();
    const dry = await guest.run(['mailsvc', 'install', '--dry-run', '--json'], { timeoutMs: 300_000 });
    if (dry.code !== 0) throw new Error(`mailsvc install --dry-run exited ${dry.code}\n${dry.stdout}\n${dry.stderr}`);
    dryRun = statuses(dry.stdout);
    dryUnchanged = (await etc()) === before;
    const again = await guest.run(['mailsvc', 'install', '--json'], { timeoutMs: 600_000 });
    if (again.code !== 0) throw new Error(`mailsvc install (again, SRS on) exited ${again.code}\n${again.stdout}\n${again.stderr}`);
    secondRun = statuses(again.stdout);
    if (Object.values(secondRun).includes('failed')) throw new Error(`mailsvc install could not wire a daemon:\n${again.stdout}`);
    // The guest has no network: mail to other domains stays in the queue, deferred.
    await sh('postconf -e "relayhost = [127.0.0.1]:2" && postfix reload');
    await ig.healthy();
    const domain = await call('POST', '/domains', { name: DOMAIN, generate_dkim: true });
    if (domain.status !== 201) throw new Error(`POST /domains: ${JSON.stringify(domain)}`);
    selector = String((domain.body.dkim as { keys: { selector: string }[] }).keys[0]?.selector);
    // One message a minute: the second submission shows the policy service deciding.
    const account = await call('POST', '/accounts', { address: ALICE, password: ALICE_PASSWORD, send_rate_per_minute: 1 });
    if (account.status !== 201) throw new Error(`POST /accounts: ${JSON.stringify(account)}`);
    const app = await call('POST', `/accounts/${String(account.body.id)}/app-passwords`, { name: 'e2e' });
    if (app.status !== 201) throw new Error(`POST app-passwords: ${JSON.stringify(app)}`);
    appPassword = String(app.body.password);
  }, 30 * 60_000);

  afterAll(async () => {
    await ig?.dispose();
  }, 180_000);

  it('install wired each daemon; --dry-run changed nothing; SRS switched on wires postsrsd on the next run; a third run finds all wired', async () => {
    expect(dryUnchanged).toBe(true);
    expect(dryRun).toMatchObject({ postsrsd: 'would wire', postfix: 'would wire', dovecot: 'already wired', nginx: 'not installed' });
    expect(secondRun).toEqual({ postfix: 'wired', dovecot: 'already wired', rspamd: 'already wired', nginx: 'not installed', fail2ban: 'already wired', postsrsd: 'wired', nftables: 'already wired' });
    const third = await guest.run(['mailsvc', 'install', '--json'], { timeoutMs: 600_000 });
    expect(third.code, third.stderr).toBe(0);
    expect(statuses(third.stdout)).toEqual({ postfix: 'already wired', dovecot: 'already wired', rspamd: 'already wired', nginx: 'not installed', fail2ban: 'already wired', postsrsd: 'already wired', nftables: 'already wired' });
    expect(await sh('systemctl is-enabled nftables; grep -c "^flush ruleset" /etc/nftables.conf || true')).toBe('enabled\n0\n');
    // fail2ban's table (made at its first ban) survives a reload of nftables.service, which reads /etc/nftables.conf.
    await sh('fail2ban-client set mailsvc-auth banip 192.0.2.45');
    await until('the ban in nftables', async () => ((await sh('nft list ruleset')).includes('192.0.2.45') ? true : undefined));
    await sh('systemctl reload nftables');
    expect(await sh('nft list tables')).toMatch(/f2b-table/);
    expect(await sh('nft list ruleset')).toContain('192.0.2.45');
    await sh('fail2ban-client set mailsvc-auth unbanip 192.0.2.45');
  }, 600_000);

  it("the wiring leaves no unit failed; the hook, policy and lookup-table sockets belong to the groups dovecot and postfix, and Postfix's tables are mailsvc's socket", async () => {
    for (const unit of ['mailsvc', 'dovecot', 'postfix', 'rspamd', 'postsrsd', 'fail2ban']) expect(`${unit} ${(await guest.run(['systemctl', 'is-active', unit])).stdout.trim()}`).toBe(`${unit} active`);
    expect((await sh('systemctl --failed --plain --no-legend --no-pager')).trim()).not.toMatch(/dovecot|postfix|rspamd|postsrsd|fail2ban|mailsvc\.service|mailsvc-helper/);
    expect((await sh('stat -c "%U:%G %a" /run/mailsvc/auth-hook.sock /var/spool/postfix/mailsvc/policy /var/spool/postfix/mailsvc/maps')).trim().split('\n')).toEqual(['mailsvc:dovecot 660', 'mailsvc:postfix 660', 'mailsvc:postfix 660']);
    // Postfix reads no database file: its five tables are answered by mailsvc.
    expect((await sh('postconf -h virtual_mailbox_maps')).trim()).toBe('proxy:socketmap:unix:/var/spool/postfix/mailsvc/maps:mailboxes');
    expect((await sh(`postmap -q ${DOMAIN} socketmap:unix:/var/spool/postfix/mailsvc/maps:domains`)).trim()).toBe(DOMAIN);
  }, 120_000);

  it('Dovecot accepts an IMAP login with an app password (only the hook knows it) and refuses a wrong one', async () => {
    const ok = await guest.run(['curl', '-sS', '--max-time', '30', 'imap://127.0.0.1/', '-u', `${ALICE}:${appPassword}`]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/INBOX/);
    const bad = await guest.run(['curl', '-sS', '--max-time', '30', 'imap://127.0.0.1/', '-u', `${ALICE}:${appPassword}x`]);
    expect(bad.code).toBe(67); // CURLE_LOGIN_DENIED
  }, 120_000);

  it('Postfix takes a submission (SASL through Dovecot and the hook); the policy service defers the next one over the account limit', async () => {
    const first = await submit('first', appPassword);
    expect(first.code, first.stderr.slice(-2000)).toBe(0);
    const queued = await until('the submitted message in the queue', async () => (await postqueue()).find((m) => m.queue_name === 'deferred'));
    queueId = queued.queue_id;
    const second = await submit('second', appPassword);
    expect(second.code).not.toBe(0);
    expect(second.stderr).toMatch(/450 4\.7\.1 .*Sending rate limit reached/);
    expect((await postqueue()).length).toBe(1);
  }, 240_000);

  it('DKIM: Rspamd signs with the key and selector mailsvc installed, on submission (milter) and when asked (rspamc)', async () => {
    expect(selector).toMatch(/^[a-z0-9-]+$/);
    expect((await sh(`stat -c "%U:%G %a" /etc/rspamd/dkim/${DOMAIN}.${selector}.key`)).trim()).toBe('root:_rspamd 640');
    const headers = await sh(`postcat -hq ${queueId}`);
    expect(headers).toMatch(new RegExp(`DKIM-Signature: .*d=${DOMAIN.replace('.', '\\.')};[\\s\\S]*s=${selector};`));
    const signed = await until('rspamc to answer', async () => {
      const r = await guest.run(['rspamc', '-h', '127.0.0.1:11334', '--mime', '--ip', '127.0.0.1', '--from', ALICE, '-u', ALICE], { input: message('rspamc') });
      return r.code === 0 && r.stdout.includes('DKIM-Signature') ? r.stdout : undefined;
    });
    expect(signed).toMatch(new RegExp(`DKIM-Signature: [\\s\\S]*d=${DOMAIN.replace('.', '\\.')};[\\s\\S]*s=${selector};`));
  }, 180_000);

  it('queue: hold, release and delete through the API reach Postfix (postqueue -j)', async () => {
    expect(queueId).not.toBe('');
    const list = await call('GET', '/admin/queue');
    expect(list.status, `${JSON.stringify(list.body)}\n${await journal()}`).toBe(200);
    expect(list.body.items).toEqual([expect.objectContaining({ queue_id: queueId, recipients: [expect.objectContaining({ address: 'bob@remote.test' })] })]);
    expect((await call('POST', `/admin/queue/${queueId}/hold`)).body).toMatchObject({ action: 'held' });
    expect((await postqueue()).find((m) => m.queue_id === queueId)?.queue_name).toBe('hold');
    expect((await call('POST', `/admin/queue/${queueId}/release`)).body).toMatchObject({ action: 'released' });
    expect((await postqueue()).find((m) => m.queue_id === queueId)?.queue_name).not.toBe('hold');
    expect((await call('DELETE', `/admin/queue/${queueId}`)).body).toMatchObject({ action: 'deleted' });
    expect((await postqueue()).find((m) => m.queue_id === queueId)).toBeUndefined();
    expect((await call('POST', `/admin/queue/${queueId}/hold`)).status).toBe(404);
  }, 180_000);

  it('limits: PATCH then apply reaches Postfix (postconf) and fail2ban (the running jail)', async () => {
    const before = (await sh('postconf -h message_size_limit')).trim();
    expect(before).not.toBe(String(30 * 1024 * 1024));
    const patch = await call('PATCH', '/admin/limits', { 'message-size-limit': '30M', 'fail2ban-mailsvc-auth-maxretry': 4 });
    expect(patch.status, JSON.stringify(patch.body)).toBe(200);
    expect((await sh('postconf -h message_size_limit')).trim()).toBe(before); // stored, not applied yet
    const applied = await call('POST', '/admin/limits/apply');
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    expect((await sh('postconf -h message_size_limit')).trim()).toBe(String(30 * 1024 * 1024));
    expect((await sh('fail2ban-client get mailsvc-auth maxretry')).trim()).toBe('4');
  }, 300_000);

  it('bans: ban and unban through the API reach fail2ban and its nftables set; the caller\'s own address is refused', async () => {
    const ip = '203.0.113.7';
    expect(await sh('fail2ban-client status')).toMatch(/mailsvc-auth/);
    const ban = await call('POST', '/admin/bans', { ip, reason: 'installed-host test' });
    expect(ban.status, `${JSON.stringify(ban.body)}\n${await journal()}`).toBe(201);
    expect(await sh('fail2ban-client status mailsvc-auth')).toContain(ip);
    await until('the ban in nftables', async () => ((await sh('nft list ruleset')).includes(ip) ? true : undefined));
    expect((await call('GET', '/admin/bans')).body.items).toEqual([expect.objectContaining({ ip, reason: 'installed-host test' })]);
    expect((await call('DELETE', `/admin/bans/${ip}`)).status).toBe(204);
    expect(await sh('fail2ban-client status mailsvc-auth')).not.toContain(ip);
    await until('the ban gone from nftables', async () => ((await sh('nft list ruleset')).includes(ip) ? undefined : true));
    const own = await viaProxy('POST', '/admin/bans', { ip: ADMIN_IP, reason: 'locks myself out' });
    expect(own.status, JSON.stringify(own.body)).toBe(422);
    expect(await sh('fail2ban-client status mailsvc-auth')).not.toContain(ADMIN_IP);
  }, 180_000);

  it('firewall: applied to the guest\'s nftables; the guard refuses a lockout; a forced change reverts unless confirmed', async () => {
    const open = [{ ports: 'ssh mail web', protocol: 'tcp', source: '', enabled: 'yes' }];
    const closed = [{ ports: 'ssh mail', protocol: 'tcp', source: '10.0.0.0/8', enabled: 'yes' }];
    // fail2ban's own table exists (a ban made directly): mailsvc's firewall must leave it alone.
    await sh('fail2ban-client set mailsvc-auth banip 192.0.2.44');
    const put = await viaProxy('PUT', '/admin/firewall', { 'firewall-enabled': 'yes', 'firewall-rules-json': open });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const applied = await nftMailsvc();
    expect(applied).toMatch(/policy drop/);
    expect(applied).toMatch(/443/);
    // Closing 443 to the administrator (through the proxy): refused, nothing changes.
    const refused = await viaProxy('PUT', '/admin/firewall', { 'firewall-rules-json': closed });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(await nftMailsvc()).toBe(applied);
    // Forced, not confirmed: in force at once, back to the open rules after 20 s.
    const forced = await viaProxy('PUT', '/admin/firewall?force=true', { 'firewall-rules-json': closed });
    expect(forced.status, JSON.stringify(forced.body)).toBe(200);
    expect(forced.body.confirm_by).toEqual(expect.any(String));
    expect(await nftMailsvc()).toMatch(/10\.0\.0\.0\/8/);
    await until('the unconfirmed change to revert', async () => ((await nftMailsvc()) === applied ? true : undefined), 90_000);
    // The stored rules follow the revert of the ruleset (the service records it once the helper's deadline fired).
    await until('the stored rules to be the open ones again', async () => {
      const rules = ((await call('GET', '/admin/firewall')).body as { 'firewall-rules-json'?: { ports?: string; source?: string }[] })['firewall-rules-json'];
      return rules?.length === 1 && rules[0]?.ports === 'ssh mail web' && rules[0]?.source === '' ? true : undefined;
    }, 60_000);
    expect((await call('GET', '/admin/firewall')).body).toMatchObject({ 'firewall-rules-json': open });
    // Forced and confirmed: it stays past the deadline.
    expect((await viaProxy('PUT', '/admin/firewall?force=true', { 'firewall-rules-json': closed })).status).toBe(200);
    expect((await viaProxy('POST', '/admin/firewall/confirm')).status).toBe(200);
    await sleep(25_000);
    expect(await nftMailsvc()).toMatch(/10\.0\.0\.0\/8/);
    // Off: mailsvc's table goes, fail2ban's stays.
    expect((await call('PUT', '/admin/firewall', { 'firewall-enabled': 'no' })).status).toBe(200);
    const ruleset = await sh('nft list tables');
    expect(ruleset).not.toMatch(/inet mailsvc/);
    expect(ruleset).toMatch(/f2b-table/);
    expect(await sh('nft list ruleset')).toContain('192.0.2.44');
    await sh('fail2ban-client set mailsvc-auth unbanip 192.0.2.44');
  }, 300_000);

  it('SRS: the sync (mailsvc-srs-sync.service, through the helper) makes postsrsd leave the local domain alone', async () => {
    const forward = async (address: string): Promise<string> => (await guest.run(['postmap', '-q', address, 'tcp:127.0.0.1:10001'])).stdout.trim();
    await until('postsrsd to answer', async () => ((await forward('bob@remote.test')).startsWith('SRS0=') ? true : undefined));
    // Domain changes sync the exclusions at once (with SRS on); the timer's sync is the safety net. Either
    // way, after it ran the file names the domain and postsrsd (restarted when the list changed) leaves it alone.
    await sh('systemctl start mailsvc-srs-sync.service', 180_000);
    expect((await sh('systemctl show -p Result --value mailsvc-srs-sync.service')).trim()).toBe('success');
    expect(await sh('grep ^SRS_EXCLUDE_DOMAINS= /etc/default/postsrsd')).toMatch(new RegExp(`^SRS_EXCLUDE_DOMAINS=${DOMAIN.replace('.', '\\.')}$`, 'm'));
    await until('postsrsd to leave the local domain alone', async () => ((await forward(ALICE)) === '' ? true : undefined));
    expect(await forward('bob@remote.test')).toMatch(new RegExp(`^SRS0=.*@${SRS_DOMAIN.replace(/\./g, '\\.')}$`));
  }, 300_000);
});
