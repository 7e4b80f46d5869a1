/**
 * From a stock Debian 12 to a healthy mail host by README's install commands
 * as they are written (read from README.md), with no other step: doctor has
 * no failure, the panel signs in with TOTP, mail from outside is delivered and
 * read with an app password, a reply goes out DKIM-signed, and it all holds
 * after a reboot and after removing mailsvc and installing it again. Two
 * paths, one test file each: the Debian package (README's "Install on a
 * Debian 12 mail host", test/first-install.e2e.test.ts) and the release
 * archive (its "From the release archive", test/first-install-archive.e2e.test.ts).
 *
 * The guest is a stock Debian 12 under systemd (nspawn-stock-root.sh: no
 * Node.js, no mail daemon; apt's cache holds the .debs the package's Depends
 * and Recommends pull in, as apt would have fetched them from Debian's
 * archive). It lives in a network namespace joined to a second one, "the
 * outside", by a veth link. The outside holds what the Internet would: the
 * HTTPS server of updates.mailsvc.org (a test CA the guest trusts), a Postfix
 * for outside.test that sends to the new host and receives its replies, the
 * administrator's browser (Chromium) and mail client (curl). What the
 * sandbox sets in the guest, and why, is all in `prepareGuest`: the
 * administrator's answers to Postfix's two install questions, the host
 * name, the hosts file and the CA in place of public DNS and a public CA,
 * and Postfix's DNS lookups switched off (there is no DNS to ask).
 *
 * The time from the first `apt-get install` to the first message delivered
 * is printed ("[first-install] …").
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { chromium as playwright, type Browser, type Page } from 'playwright-core';
import { bootGuest, cachedStockRoot, makeOverlay, nspawnUnavailable, type Guest, type Overlay } from './nspawn.js';
import { REPO_ROOT } from './cli.js';
import { publishRelease, stageRelease } from './releases.js';
import { skipNotice } from './services.js';
import { makeTestCa, type TestCa } from './test-ca.js';
import { oathtoolCode, oathtoolInstalled } from './totp.js';
import { CHROMIUM, CHROMIUM_ARGS } from './panel-stack.js';
import { findProgram } from './mail-daemons.js';
import { makeNetnsPair, type NetnsPair } from './netns.js';
import { POSTFIX_INTERNAL_SERVICES } from './postfix-queue.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The package names the .deb depends on and recommends (versions dropped): what apt fetches for it. */
const { DEPENDS, RECOMMENDS } = (await import(pathToFileURL(join(REPO_ROOT, 'scripts/release/deb.mjs')).href)) as { DEPENDS: string[]; RECOMMENDS: string[] };
const PACKAGES = [...DEPENDS, ...RECOMMENDS].map((d) => d.split(/\s/)[0] as string);

/** The first ```sh block under README's heading `heading` (up to the next heading of its level or above). */
function readmeCommands(readme: string, heading: string): string[] {
  const level = /^#+/.exec(heading)![0].length;
  const section = readme.split(new RegExp(`^${heading.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'))[1]?.split(new RegExp(`^#{1,${level}} `, 'm'))[0] ?? '';
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
}

/**
 * One way in, as README writes it: its commands, what each must look like, which one installs mailsvc (its
 * output is the install report), which one starts the clock, and how mailsvc is removed and installed again.
 */
type InstallPath = {
  name: string;
  commands: string[];
  /** The commands README must hold (the test's reading of them), given the URL and version found. */
  expected: string[];
  url: string;
  version: string;
  /** Whether the feed must hold the .deb (building it takes a minute). */
  deb: boolean;
  installIndex: number;
  clockIndex: number;
  remove: string;
  again: string;
};

const README = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');

function installPath(kind: 'deb' | 'archive'): InstallPath {
  if (kind === 'deb') {
    const commands = readmeCommands(README, '## Install on a Debian 12 mail host');
    const url = /^wget (https:\/\/\S+\.deb)$/.exec(commands[0] ?? '')?.[1] ?? '';
    const version = /\/mailsvc_([^_]+)-1_amd64\.deb$/.exec(url)?.[1] ?? '';
    return {
      name: 'the Debian package',
      commands,
      expected: [`wget ${url}`, `apt-get install -y ./mailsvc_${version}-1_amd64.deb`, 'mailsvc admin set-password && mailsvc doctor'],
      url,
      version,
      deb: true,
      installIndex: 1,
      clockIndex: 1,
      remove: 'apt-get remove -y mailsvc',
      again: `apt-get install -y ./mailsvc_${version}-1_amd64.deb`,
    };
  }
  const commands = readmeCommands(README, '### From the release archive');
  const url = /^wget (https:\/\/\S+\.tar\.gz) /.exec(commands[1] ?? '')?.[1] ?? '';
  const version = /\/mailsvc-([^/]+)\.tar\.gz$/.exec(url)?.[1] ?? '';
  const name = `mailsvc-${version}`;
  return {
    name: 'the release archive',
    commands,
    // The daemons from Debian are the package's Recommends: what apt would install beside the .deb.
    expected: [
      `apt-get install -y ${RECOMMENDS.join(' ')}`,
      `wget ${url} ${url}.sha256`,
      `sha256sum -c ${name}.tar.gz.sha256 && tar -xzf ${name}.tar.gz && ${name}/bin/mailsvc install`,
      'mailsvc admin set-password && mailsvc doctor',
    ],
    url,
    version,
    deb: false,
    installIndex: 2,
    clockIndex: 0,
    remove: 'mailsvc uninstall',
    again: `${name}/bin/mailsvc install`,
  };
}

/** Debian's python3 (python3-dkim is its package), not another one first on PATH. */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const DOMAIN = 'example.test';
const HOST = `mail.${DOMAIN}`;
const ALICE = `alice@${DOMAIN}`;
const BOB = 'bob@outside.test';
const ADMIN_PASSWORD = 'a long first-install password';

function unavailable(): string | null {
  const why =
    nspawnUnavailable() ??
    (oathtoolInstalled() ? null : 'oathtool missing (apt-get install oathtool)') ??
    (existsSync(CHROMIUM) ? null : `${CHROMIUM} missing (apt-get install chromium)`) ??
    (['postfix', 'ip', 'python3', 'curl', 'openssl'].find((p) => findProgram(p) === null) ?? null)?.replace(/^/, 'missing on this machine: ') ??
    (spawnOk(PYTHON, ['-c', 'import dkim']) ? null : 'python3-dkim missing (apt-get install python3-dkim)');
  if (why) skipNotice('a stock Debian 12 guest beside an outside network (first install)', why);
  return why;
}
function spawnOk(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}


/** Serves `root` over HTTPS on addr:443 (python3's http.server): updates.mailsvc.org for the guest. */
const FILE_SERVER = `
import functools, http.server, ssl, sys
root, addr, cert, key = sys.argv[1:5]
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=root)
server = http.server.ThreadingHTTPServer((addr, 443), handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
print('ready', flush=True)
server.serve_forever()
`;

/** Verifies every DKIM-Signature of the message on stdin against the record given (no DNS: the test knows it). */
const DKIM_VERIFY = `
import sys, dkim
name, value = sys.argv[1].encode(), sys.argv[2].encode()
def dnsfunc(q, timeout=5):
    q = q if isinstance(q, bytes) else q.encode()
    return value if q.rstrip(b'.') == name else b''
msg = sys.stdin.buffer.read()
print('pass' if dkim.verify(msg, dnsfunc=dnsfunc) else 'fail')
`;

/** The queue Postfix's services, and what delivering and sending need besides (bob's mailbox, the relay to the guest). */
const POSTFIX_SERVICES = `${POSTFIX_INTERNAL_SERVICES}verify    unix  -       -       n       -       1       verify
relay     unix  -       -       n       -       -       smtp
virtual   unix  -       n       n       -       -       virtual
`;

/** The test of one install path (`deb`: the package; `archive`: the tar.gz), in its own file. */
export function describeFirstInstall(kind: 'deb' | 'archive'): void {
  const path = installPath(kind);
  const { commands: COMMANDS, url: URL_, version: VERSION } = path;
  const FEED_HOST = URL_ ? new URL(URL_).hostname : '';
  let missing = unavailable();
  let lower = '';
  if (!missing) {
    if (!VERSION || COMMANDS.length !== path.expected.length) throw new Error(`README's install section for ${path.name} is not the commands this test runs: ${JSON.stringify(COMMANDS)}`);
    try {
      lower = cachedStockRoot(PACKAGES);
    } catch (e) {
      missing = `the stock Debian 12 root could not be built (test/helpers/nspawn-stock-root.sh): ${String((e as { stderr?: Buffer }).stderr ?? e).slice(-600)}`;
      skipNotice('a stock Debian 12 guest', missing);
    }
  }

  describe.skipIf(missing !== null)(`from a stock Debian 12 to a healthy mail host by README's commands: ${path.name} (nspawn, an outside network)`, () => {
    const tag = randomBytes(3).toString('hex');
    /** The guest's namespace (the pair's server side) and the outside's (its client side), on one veth link. */
    let net: NetnsPair | undefined;
    let OUT = '';
    let GNS = '';
    let OUT_ADDR = '';
    let GUEST_ADDR = '';
    let tmp = '';
    let ca: TestCa | undefined;
    let overlay: Overlay | undefined;
    let guest: Guest;
    let fileServer: ChildProcess | undefined;
    let postfixEtc = '';
    let browser: Browser | undefined;
    let appPassword = '';
    let installStarted = 0;
    let readme: { command: string; code: number | null; out: string }[] = [];

    /** A program in the outside namespace. */
    const outside = async (argv: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> =>
      new Promise((resolve) => {
        const child = spawn('ip', ['netns', 'exec', OUT, ...argv], { stdio: ['pipe', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
        child.on('close', (code) => (clearTimeout(timer), resolve({ code: code ?? -1, stdout, stderr })));
        child.stdin.on('error', () => undefined);
        child.stdin.end(input ?? '');
      });
    const sh = (script: string, timeoutMs = 120_000): Promise<string> => guest.sh(script, { timeoutMs });
    const until = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 180_000): Promise<T> => {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const v = await probe();
        if (v !== undefined) return v;
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await sleep(500);
      }
    };
    /** https://mail.example.test<path> from the outside, through the guest's nginx. */
    const https = async (path: string): Promise<{ status: number; text: string }> => {
      const r = await outside(['curl', '-sk', '--max-time', '20', '--resolve', `${HOST}:443:${GUEST_ADDR}`, '-w', '\n%{http_code}', `https://${HOST}${path}`]);
      const nl = r.stdout.lastIndexOf('\n');
      return { status: Number(r.stdout.slice(nl + 1)) || 0, text: r.stdout.slice(0, nl) };
    };
    const healthy = () => until('/health through nginx', async () => ((await https('/health')).status === 200 ? true : undefined), 180_000);
    /** Message `n` of alice's INBOX over IMAP (STARTTLS) with the app password, from the outside; '' when there is none. */
    const imapMessage = async (n: number, password = appPassword): Promise<string> => {
      const r = await outside(['curl', '-sS', '--max-time', '30', '--ssl-reqd', '-k', `imap://${GUEST_ADDR}/INBOX;MAILINDEX=${n}`, '-u', `${ALICE}:${password}`]);
      return r.code === 0 ? r.stdout : '';
    };
    const message = (from: string, to: string, subject: string, extra = ''): string =>
      `From: <${from}>\r\nTo: <${to}>\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '')}.${tag}@${from.split('@')[1]}>\r\nDate: ${new Date().toUTCString()}\r\n${extra}\r\n${subject}: hello.\r\n`;
    /** bob@outside.test sends through the outside Postfix, which delivers to the guest's MX. */
    const sendFromOutside = async (subject: string): Promise<void> => {
      const r = await outside(['curl', '-sS', '--max-time', '30', `smtp://${OUT_ADDR}:25`, '--mail-from', BOB, '--mail-rcpt', ALICE, '-T', '-'], message(BOB, ALICE, subject));
      const log = join(tmp, 'outside', 'postfix.log');
      expect(r.code, `${r.stderr}\nthe outside Postfix's log:\n${existsSync(log) ? readFileSync(log, 'utf8').slice(-3000) : '(none)'}`).toBe(0);
    };
    const outsideMailbox = (): string[] => {
      const dir = join(tmp, 'outside', 'mail', 'bob', 'new');
      return existsSync(dir) ? readdirSync(dir).map((f) => readFileSync(join(dir, f), 'utf8')) : [];
    };
    const failedUnits = async (): Promise<string> => (await guest.run(['systemctl', '--failed', '--plain', '--no-legend', '--no-pager'])).stdout.trim();
    const boot = async (): Promise<Guest> => bootGuest(overlay!.merged, { logDir: tmp, netns: GNS, timeoutMs: 240_000 });

    /** The outside Postfix: outside.test's mailboxes (bob's Maildir), and example.test's mail sent to the guest. */
    async function startOutsidePostfix(): Promise<void> {
      const dir = join(tmp, 'outside');
      postfixEtc = join(dir, 'etc');
      for (const d of [postfixEtc, join(dir, 'queue'), join(dir, 'data'), join(dir, 'mail')]) mkdirSync(d, { recursive: true });
      chmodSync(dir, 0o755);
      chownSync(join(dir, 'data'), Number(execFileSync('id', ['-u', 'postfix']).toString().trim()), 0);
      chownSync(join(dir, 'mail'), 65534, 65534);
      writeFileSync(join(postfixEtc, 'main.cf'), [
        `compatibility_level = 3.6\nqueue_directory = ${dir}/queue\ndata_directory = ${dir}/data`,
        `maillog_file = ${dir}/postfix.log\nmaillog_file_prefixes = ${dir}\nsyslog_name = postfix-outside-${tag}`,
        'myhostname = mx.outside.test\nmydomain = outside.test\nmyorigin = outside.test\nmydestination =\nalias_maps =\nalias_database =',
        `inet_interfaces = ${OUT_ADDR}\ninet_protocols = ipv4\nmynetworks = 127.0.0.0/8 ${OUT_ADDR}/32`,
        `virtual_mailbox_domains = outside.test\nvirtual_mailbox_base = ${dir}/mail\nvirtual_mailbox_maps = static:bob/\nvirtual_uid_maps = static:65534\nvirtual_gid_maps = static:65534`,
        `transport_maps = inline:{ ${DOMAIN}=smtp:[${GUEST_ADDR}]:25 }`,
        // No DNS out here either: the next hop is an address, and clients are not looked up.
        'smtp_dns_support_level = disabled\nsmtpd_peername_lookup = no',
        'smtp_tls_security_level = may\nsmtpd_tls_security_level = none',
        // A deferred message is tried again soon (the guest may still be starting its daemons).
        'minimal_backoff_time = 5s\nmaximal_backoff_time = 10s\nqueue_run_delay = 5s',
      ].join('\n') + '\n');
      writeFileSync(join(postfixEtc, 'master.cf'), `${POSTFIX_SERVICES}${OUT_ADDR}:25 inet n - n - - smtpd\n`);
      const r = await outside(['postfix', '-c', postfixEtc, 'start']);
      if (r.code !== 0) throw new Error(`the outside Postfix did not start: ${r.stdout}${r.stderr}`);
    }

    /** What the sandbox stands in for (see the file's comment), before and after the guest's first boot. */
    async function prepareGuest(): Promise<void> {
      const root = overlay!.merged;
      writeFileSync(join(root, 'etc/hostname'), `${HOST}\n`);
      writeFileSync(join(root, 'etc/hosts'), `127.0.0.1 localhost\n127.0.1.1 ${HOST} mail\n${GUEST_ADDR} ${HOST}\n${OUT_ADDR} ${FEED_HOST} outside.test mx.outside.test\n`);
      mkdirSync(join(root, 'usr/local/share/ca-certificates'), { recursive: true });
      writeFileSync(join(root, 'usr/local/share/ca-certificates/mailsvc-test-ca.crt'), ca!.ca);
    }

    beforeAll(async () => {
      tmp = mkdtempSync('/var/tmp/mailsvc-first-install-');
      // The outside Postfix's queue and mailboxes are under it: its users (postfix, nobody) must reach them.
      chmodSync(tmp, 0o755);
      // The release at README's version, as the update server would publish it.
      const key = join(tmp, 'signing.pem');
      writeFileSync(key, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
      // <feed>/stable/<version>/: the archive, its .sha256 and (for the package's path) the .deb.
      const feed = new URL(URL_);
      const published = publishRelease(stageRelease(join(tmp, 'stage'), VERSION, key), join(tmp, 'feed'), feed.origin, key, 'stable', path.deb);
      expect(published.version).toBe(VERSION);
      expect(existsSync(join(tmp, 'feed', feed.pathname)), `${feed.pathname} published`).toBe(true);

      // Two namespaces on one link: the guest's and the outside's.
      net = await makeNetnsPair();
      ({ server: GNS, serverAddr: GUEST_ADDR, client: OUT, clientAddr: OUT_ADDR } = net);

      ca = makeTestCa([FEED_HOST]);
      writeFileSync(join(ca.dir, 'server.key.pem'), ca.key);
      fileServer = spawn('ip', ['netns', 'exec', OUT, PYTHON, '-c', FILE_SERVER, join(tmp, 'feed'), OUT_ADDR, ca.chain, join(ca.dir, 'server.key.pem')], { stdio: ['ignore', 'pipe', 'pipe'] });
      await new Promise<void>((resolve, reject) => {
        let err = '';
        fileServer!.stderr!.on('data', (d: Buffer) => (err += d.toString()));
        fileServer!.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
        fileServer!.once('exit', (code) => reject(new Error(`the file server exited ${code}: ${err}`)));
      });
      await startOutsidePostfix();

      overlay = makeOverlay(lower);
      await prepareGuest();
      guest = await boot();
      await sh('update-ca-certificates >/dev/null');
      // The administrator's answers to Postfix's questions (README: "Internet Site, and your mail host name").
      await sh(`printf 'postfix postfix/main_mailer_type select Internet Site\\npostfix postfix/mailname string ${HOST}\\n' | debconf-set-selections`);
    }, 60 * 60_000);

    // What a failing step leaves to look at: the install's report, the daemons' logs, what listens, Postfix's settings.
    afterEach(async (ctx) => {
      if (ctx.task.result?.state !== 'fail' || !guest) return;
      const show = async (title: string, script: string): Promise<void> => {
        const r = await guest.run(['sh', '-c', script], { timeoutMs: 60_000 }).catch((e: unknown) => ({ stdout: '', stderr: String(e) }));
        console.log(`[first-install] ${title}:\n${(r.stdout + r.stderr).slice(-6000)}`);
      };
      const installed = readme[path.installIndex];
      if (installed) console.log(`[first-install] the output of ${installed.command} (its end):\n${installed.out.slice(-6000)}`);
      await show('listening', 'ss -ltnp');
      await show('journal', 'journalctl --no-pager -n 80 -o short -u postfix@- -u mailsvc -u nginx -u dovecot -u rspamd');
      await show('postconf -n', 'postconf -n');
      await show('postconf -M', 'postconf -M');
      await show('nftables', 'systemctl status nftables --no-pager -l | tail -n 20; nft list tables 2>&1 | head -n 20');
      await show('the helper and the limits', 'journalctl --no-pager -n 60 -o short -u mailsvc-helper; journalctl --no-pager -p warning -n 40 -o short');
      await show('the timers\' runs', 'journalctl --no-pager -n 60 -o short -u "mailsvc-*.service"');
    }, 120_000);

    afterAll(async () => {
      await browser?.close().catch(() => undefined);
      await guest?.halt();
      overlay?.remove();
      if (postfixEtc) await outside(['postfix', '-c', postfixEtc, 'stop']).catch(() => undefined);
      fileServer?.kill('SIGKILL');
      await net?.destroy();
      ca?.cleanup();
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    }, 240_000);

    it('the guest is a stock Debian 12: no node, no mail daemon; README\'s commands install mailsvc as they are written', async () => {
      expect((await guest.run(['sh', '-c', 'command -v node nodejs postfix dovecot'])).stdout).toBe('');
      expect(COMMANDS).toEqual(path.expected);
      readme = [];
      for (const [i, command] of COMMANDS.entries()) {
        if (i === path.clockIndex) installStarted = Date.now();
        // As an administrator runs them, in root's home; the password line on a terminal, where it is typed twice.
        const last = i === COMMANDS.length - 1;
        const r = last
          ? await guest.run(['script', '-qec', `cd /root && ${command}`, '/dev/null'], { input: `${ADMIN_PASSWORD}\n${ADMIN_PASSWORD}\n`, timeoutMs: 600_000, env: { TERM: 'dumb' } })
          : await guest.run(['sh', '-c', `cd /root && ${command}`], { timeoutMs: 900_000 });
        readme.push({ command, code: r.code, out: r.stdout + r.stderr });
        expect(r.code, `${command}\n${(r.stdout + r.stderr).slice(-4000)}`).toBe(0);
        // What wget fetched is what the feed published (the archive's path checks its .sha256 itself, in the next line).
        if (command.startsWith('wget ')) expect(await sh(`cd /root && sha256sum ${URL_.split('/').pop()!}`)).toContain(execFileSync('sha256sum', [join(tmp, 'feed', new URL(URL_).pathname)]).toString().split(' ')[0]);
      }
      const report = readme[path.installIndex]!.out;
      expect(report).toContain('done: migrations');
      // Every mail daemon wired (nftables too: enabled at boot, its ruleset unable to flush fail2ban's tables), none failed.
      expect(report).toMatch(/^ {2}nftables: wired$/m);
      expect(report).not.toMatch(/^ {2}[a-z0-9]+: failed/m);
      // The archive's install copied the release: the unpacked directory is no longer what runs.
      if (kind === 'archive') expect((await sh('readlink -f /usr/local/bin/mailsvc')).trim()).toBe(`/opt/mailsvc/releases/${VERSION}/bin/mailsvc`);
      expect(readme[COMMANDS.length - 1]!.out).toMatch(/The service was restarted and answers/);
      const v = JSON.parse(await sh('mailsvc --version --json')) as { version: string; node: string; runtime: string };
      expect(v).toMatchObject({ version: VERSION, runtime: 'bundled' });
      expect(v.node).toMatch(/^v24\./);
      for (const unit of ['mailsvc', 'postfix', 'dovecot', 'rspamd', 'nginx', 'fail2ban']) expect(`${unit} ${(await guest.run(['systemctl', 'is-active', unit])).stdout.trim()}`).toBe(`${unit} active`);
      // There is no DNS in the sandbox: Postfix finds outside.test in the hosts file (its lookups there are native).
      await sh('postconf -e "smtp_dns_support_level = disabled" && postfix reload');
    }, 30 * 60_000);

    it('the first message from a Postfix outside is delivered and read over IMAP with an app password', async () => {
      await sh(`mailsvc add domain ${DOMAIN} --generate-dkim`);
      await guest.sh(`mailsvc accounts add ${ALICE} --password-stdin`, { input: 'a long mailbox password 7\n' });
      appPassword = String((JSON.parse(await sh(`mailsvc accounts app-passwords add ${ALICE} --name phone --json`)) as { password: string }).password);
      expect(appPassword.length).toBeGreaterThan(10);
      await sendFromOutside('first');
      const first = await until('the first message in the INBOX', async () => ((await imapMessage(1)).includes('first: hello.') ? imapMessage(1) : undefined), 300_000);
      const seconds = Math.round((Date.now() - installStarted) / 1000);
      console.log(`[first-install] ${path.name}: ${COMMANDS[path.clockIndex]!.split(' ').slice(0, 2).join(' ')} → first message delivered and read: ${seconds} s`);
      expect(first).toMatch(/^Subject: first/m);
      // A wrong app password is refused.
      expect(await imapMessage(1, `${appPassword}x`)).toBe('');
    }, 10 * 60_000);

    it('mailsvc doctor --json has no fail, and each warn is one the sandbox explains', async () => {
      const r = await guest.run(['mailsvc', 'doctor', '--json'], { timeoutMs: 180_000 });
      const report = JSON.parse(r.stdout) as { counts: { fail: number }; checks: { id: string; status: string; detail: string }[] };
      const fails = report.checks.filter((c) => c.status === 'fail');
      expect(fails, JSON.stringify(fails, null, 1)).toEqual([]);
      expect(r.code).toBe(0);
      const warns = report.checks.filter((c) => c.status === 'warn');
      console.log(`[first-install] doctor warns: ${JSON.stringify(warns.map((w) => `${w.id}: ${w.detail}`), null, 1)}`);
      // What only the sandbox causes: no public DNS to check against, and nginx's self-signed certificate before ACME.
      const EXPLAINED = /^(dns\.|certs?\.|tls\.|backup\.|timers?\.)/;
      expect(warns.filter((w) => !EXPLAINED.test(w.id)), JSON.stringify(warns, null, 1)).toEqual([]);
    }, 5 * 60_000);

    it('the panel signs in with TOTP in Chromium (enrolled at the first sign-in), and /health/details is ok', async () => {
      // Chromium runs in the outside namespace: the administrator's browser, reaching the host through its nginx.
      const wrapper = join(tmp, 'chromium-outside.sh');
      writeFileSync(wrapper, `#!/bin/sh\nexec ip netns exec ${OUT} ${CHROMIUM} "$@"\n`, { mode: 0o755 });
      browser = await playwright.launch({ executablePath: wrapper, headless: true, args: [...CHROMIUM_ARGS, `--host-resolver-rules=MAP ${HOST} ${GUEST_ADDR}`] });
      const context = await browser.newContext({ ignoreHTTPSErrors: true, serviceWorkers: 'block' });
      const page: Page = await context.newPage();
      const signIn = async (): Promise<void> => {
        await page.getByLabel('Password', { exact: true }).fill(ADMIN_PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
      };
      await page.goto(`https://${HOST}/panel/`);
      await signIn();
      await page.goto(`https://${HOST}/panel/#/security`);
      await page.getByRole('button', { name: 'Set up TOTP' }).click();
      const secret = (await page.getByTestId('shown-once').textContent())!.trim();
      expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
      const enrolledAt = Date.now();
      await page.getByLabel('Code from the app').fill(oathtoolCode(secret, enrolledAt));
      await page.getByRole('button', { name: 'Confirm' }).click();
      await page.getByRole('button', { name: 'I have saved them' }).click();
      await page.getByRole('heading', { name: 'Sign in to mailsvc' }).waitFor();
      await signIn();
      // A code is taken once: the sign-in waits for the next step.
      while (Math.floor(Date.now() / 30_000) <= Math.floor(enrolledAt / 30_000)) await sleep(1000);
      await page.getByRole('textbox', { name: 'Code', exact: true }).fill(oathtoolCode(secret));
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      const details = (await page.evaluate(`fetch('/panel/api/health/details').then(async (r) => ({ status: r.status, body: await r.json() }))`)) as { status: number; body: { status: string } };
      expect(details.status, JSON.stringify(details.body)).toBe(200);
      expect(details.body.status, JSON.stringify(details.body)).toBe('ok');
      await page.goto(`https://${HOST}/panel/#/domains`);
      await page.getByRole('cell', { name: DOMAIN }).first().waitFor();
    }, 5 * 60_000);

    it('a reply goes out DKIM-signed for the domain and not SRS-rewritten', async () => {
      const keys = JSON.parse(await sh(`mailsvc dns keys ${DOMAIN} --json`)) as { selector: string; record_name: string; record_value: string; state: string }[];
      const signing = keys.find((k) => k.state === 'active') ?? keys[0]!;
      const reply = message(ALICE, BOB, 'reply', `In-Reply-To: <first.${tag}@outside.test>\r\n`);
      const sent = await outside(['curl', '-sS', '--max-time', '60', '--ssl-reqd', '-k', `smtp://${GUEST_ADDR}:587`, '--mail-from', ALICE, '--mail-rcpt', BOB, '-u', `${ALICE}:${appPassword}`, '-T', '-'], reply);
      expect(sent.code, sent.stderr).toBe(0);
      const got = await until('the reply in bob\'s mailbox outside', async () => outsideMailbox().find((m) => m.includes('reply: hello.')), 300_000);
      expect(got).toMatch(new RegExp(`^Return-Path: <${ALICE.replace('.', '\\.')}>`, 'm'));
      expect(got).not.toMatch(/SRS[01]=/);
      expect(got).toMatch(new RegExp(`DKIM-Signature:[\\s\\S]*d=${DOMAIN.replace('.', '\\.')};`));
      const verdict = execFileSync(PYTHON, ['-c', DKIM_VERIFY, signing.record_name, signing.record_value], { input: got.replace(/^Return-Path:.*\n|^Delivered-To:.*\n/gm, '').replace(/\r?\n/g, '\r\n') }).toString().trim();
      expect(verdict).toBe('pass');
    }, 10 * 60_000);

    it('after a reboot it all holds: no unit failed, the mail is there, a new message is delivered', async () => {
      await guest.halt();
      guest = await boot();
      await healthy();
      expect(await failedUnits()).toBe('');
      expect(await imapMessage(1)).toContain('first: hello.');
      await sendFromOutside('after-reboot');
      await until('the message sent after the reboot', async () => ((await imapMessage(2)).includes('after-reboot: hello.') ? true : undefined), 300_000);
    }, 15 * 60_000);

    it(`${path.remove}, then ${path.again}: the domain, the mailbox, its mail and the app password are all kept`, async () => {
      const root = (command: string) => guest.run(['sh', '-c', `cd /root && ${command}`], { timeoutMs: 600_000 });
      const rm = await root(path.remove);
      expect(rm.code, rm.stdout + rm.stderr).toBe(0);
      expect((await guest.run(['systemctl', 'is-active', 'mailsvc'])).stdout.trim()).not.toBe('active');
      const again = await root(path.again);
      expect(again.code, again.stdout + again.stderr).toBe(0);
      await healthy();
      expect((JSON.parse(await sh('mailsvc domains list --json')) as { items: { name: string }[] }).items.map((d) => d.name)).toContain(DOMAIN);
      expect(await imapMessage(2)).toContain('after-reboot: hello.');
      await sendFromOutside('after-reinstall');
      await until('the message sent after installing again', async () => ((await imapMessage(3)).includes('after-reinstall: hello.') ? true : undefined), 300_000);
    }, 20 * 60_000);
  });
}
