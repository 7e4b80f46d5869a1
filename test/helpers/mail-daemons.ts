import { execFile, spawn } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { DialectName } from '../../src/db/database.js';
import { SOCKETMAP_NAMES } from '../../src/modules/install/wiring/postfix.js';
import { waitForGreeting } from './mail-clients.js';

/**
 * Real Dovecot and Postfix, each from its own configuration in a temp
 * directory, listening on 127.0.0.1 only. The configuration is built from the
 * files in deploy/ with paths and credentials substituted, so a test that
 * passes here proves deploy/ works; a substitution that no longer matches
 * fails loudly instead of silently testing something else.
 */

const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url));
const execFileP = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const readOr = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8') : '');
type Substitutions = Array<[string | RegExp, string]>;

/** Absolute path of a program on PATH or in the sbin directories, or null. */
export function findProgram(name: string): string | null {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/bin', '/sbin'].filter(Boolean);
  return dirs.map((d) => join(d, name)).find((p) => existsSync(p)) ?? null;
}

const REQUIRED_FILES = ['/usr/lib/dovecot/modules/auth/libauthdb_lua.so', '/usr/lib/dovecot/lmtp', '/usr/share/lua/5.4/socket.lua'];

/** Why the mail daemons cannot run here (missing programs or packages, not root), or null. */
export function mailDaemonsUnavailable(): string | null {
  const missing = ['dovecot', 'doveadm', 'postfix', 'swaks', 'python3'].filter((p) => findProgram(p) === null);
  missing.push(...REQUIRED_FILES.filter((f) => !existsSync(f)));
  if (missing.length > 0) return `missing ${missing.join(', ')}`;
  return process.getuid?.() === 0 ? null : 'Postfix and Dovecot need root to start';
}

/** The ports handed out in this process: the kernel may give a port just closed again, and two daemons of one test must not get the same. */
const handedOut = new Set<number>();

export async function freePort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = createServer().once('error', reject);
      srv.listen(0, '127.0.0.1', () => {
        const addr = srv.address();
        srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free port that this process has not handed out already');
}

/** Each `from` must occur in the text: deploy/ changing under the tests should fail, not pass. */
function deployFile(rel: string, pairs: Substitutions = []): string {
  let text = readFileSync(join(DEPLOY, rel), 'utf8');
  for (const [from, to] of pairs) {
    if (typeof from === 'string' ? !text.includes(from) : !from.test(text)) throw new Error(`deploy/${rel}: ${String(from)} not found`);
    text = typeof from === 'string' ? text.split(from).join(to) : text.replace(from, to);
  }
  return text;
}

type DbTarget = { path: string; host: string; port: string; dbname: string; user: string; password: string };

function dbTarget(dialect: DialectName, url: string): DbTarget {
  if (dialect === 'sqlite') return { path: url.replace(/^sqlite:\/\//, ''), host: '', port: '', dbname: '', user: '', password: '' };
  const u = new URL(url);
  const port = u.port || (dialect === 'postgres' ? '5432' : '3306');
  const dbname = decodeURIComponent(u.pathname.slice(1));
  return { path: '', host: u.hostname, port, dbname, user: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
}

/** The deploy/ file suffix (Dovecot driver, Postfix table type) of a dialect. */
const SQL_TYPE: Record<DialectName, 'sqlite' | 'pgsql' | 'mysql'> = { sqlite: 'sqlite', postgres: 'pgsql', mysql: 'mysql' };

/**
 * The daemons read the SQLite file as their own users (dovecot, postfix), and
 * in WAL mode readers create and write the -wal/-shm files beside it (SQLite
 * gives those the database file's mode).
 */
function shareSqliteDatabase(dialect: DialectName, url: string): void {
  if (dialect !== 'sqlite') return;
  const dir = dirname(dbTarget(dialect, url).path);
  chmodSync(dir, 0o777);
  for (const f of readdirSync(dir)) chmodSync(join(dir, f), 0o666);
}

/** A fresh temp directory that the daemons' unprivileged users may enter. */
function daemonDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

function chownTo(path: string, user: string): void {
  const [, , uid, gid] = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${user}:`))?.split(':') ?? [];
  chownSync(path, Number(uid ?? NaN), Number(gid ?? NaN));
}

export type DovecotOptions = {
  dialect: DialectName;
  databaseUrl: string;
  hookSocket: string;
  /**
   * Raw dovecot.conf text placed just before deploy/'s auth configuration, so
   * any passdb/userdb blocks in it come first in Dovecot's chains (the bench
   * puts a passwd-file passdb ahead of the hook there). Omitted: nothing added.
   */
  extraPassdbFirst?: string;
  /**
   * TLS with this certificate and key (PEM files): the client listeners then
   * come from deploy/dovecot/conf.d/13-mailsvc-listeners.conf with its ports
   * moved to free ones (imapPort for 143, imapsPort for 993), as installed.
   * Omitted: plain-text IMAP and POP3 on free ports, no TLS.
   */
  tls?: { cert: string; key: string };
  /** deploy/dovecot/conf.d files to include as well (e.g. 12-mailsvc-portal.conf), copied into the temp dir. */
  confD?: string[];
  /** Raw dovecot.conf text appended at the end (e.g. submission_host for Sieve's replies and redirects). */
  extra?: string;
};
export type Dovecot = {
  imapPort: number;
  /** IMAP over implicit TLS (with `tls`), else 0. */
  imapsPort: number;
  /** POP3 (without `tls`), else 0. */
  pop3Port: number;
  /** The client listeners file as Dovecot reads it (with `tls`), else ''. */
  listenersPath: string;
  /** Dovecot SASL socket for Postfix (smtpd_sasl_path). */
  authSocket: string;
  /** LMTP socket for Postfix (virtual_transport = lmtp:unix:<this>). */
  lmtpSocket: string;
  /** For `doveadm -c <configPath> …`. */
  configPath: string;
  /** Runs `doveadm -c <configPath> <args>`, resolves with its stdout. */
  doveadm(args: string[]): Promise<string>;
  logs(): string;
  stop(): Promise<void>;
};

function dovecotConnect(dialect: DialectName, t: DbTarget): string {
  if (dialect === 'sqlite') return t.path;
  return [`host=${t.host}`, `port=${t.port}`, `dbname=${t.dbname}`, `user=${t.user}`, ...(t.password ? [`password=${t.password}`] : [])].join(' ');
}

function writeDovecotConfig(dir: string, opts: DovecotOptions, imapPort: number, pop3Port: number, imapsPort: number): void {
  const [vmail, postfixPrivate, lua, sql] = ['vmail', 'postfix-private', 'mailsvc-auth.lua', 'dovecot-sql.conf.ext'].map((f) => join(dir, f)) as [string, string, string, string];
  mkdirSync(join(dir, 'conf.d'));
  mkdirSync(postfixPrivate);
  mkdirSync(vmail);
  chownTo(vmail, 'nobody');
  copyFileSync(join(DEPLOY, 'dovecot/mailsvc-auth.lua'), lua);
  writeFileSync(sql, deployFile(`dovecot/dovecot-sql.${SQL_TYPE[opts.dialect]}.conf.ext`, [
    [/^connect = .*$/m, `connect = ${dovecotConnect(opts.dialect, dbTarget(opts.dialect, opts.databaseUrl))}`],
  ]));
  writeFileSync(join(dir, 'conf.d/10-mailsvc-auth.conf'), deployFile('dovecot/conf.d/10-mailsvc-auth.conf', [
    ['/etc/dovecot/mailsvc-auth.lua', lua],
    ['/etc/dovecot/dovecot-sql.conf.ext', sql],
    ['MAILSVC_AUTH_HOOK_SOCKET=/run/mailsvc/auth-hook.sock', `MAILSVC_AUTH_HOOK_SOCKET=${opts.hookSocket}`],
    // No vmail user on test machines: nobody owns the test mailboxes.
    ['uid=vmail gid=vmail', 'uid=nobody gid=nogroup'],
    ['home=/var/vmail/', `home=${vmail}/`],
  ]));
  writeFileSync(join(dir, 'conf.d/11-mailsvc-postfix.conf'), deployFile('dovecot/conf.d/11-mailsvc-postfix.conf', [
    ['/var/spool/postfix/private/', `${postfixPrivate}/`],
  ]));
  const listener = (service: string, port: number) =>
    `service ${service}-login {\n  inet_listener ${service} {\n    port = ${port}\n  }\n  inet_listener ${service}s {\n    port = 0\n  }\n}`;
  if (opts.tls) {
    writeFileSync(join(dir, 'conf.d/13-mailsvc-listeners.conf'), deployFile('dovecot/conf.d/13-mailsvc-listeners.conf', [
      [/port = 143$/m, `port = ${imapPort}`],
      [/port = 993$/m, `port = ${imapsPort}`],
    ]));
  }
  writeFileSync(join(dir, 'dovecot.conf'), [
    `base_dir = ${dir}/run\nstate_dir = ${dir}/state\nlog_path = ${dir}/dovecot.log`,
    'protocols = imap pop3 lmtp\nlisten = 127.0.0.1\nauth_verbose = yes',
    opts.tls
      ? `ssl = yes\nssl_cert = <${opts.tls.cert}\nssl_key = <${opts.tls.key}\ndisable_plaintext_auth = yes`
      : '# Plain-text logins over loopback, for tests only.\nssl = no\ndisable_plaintext_auth = no',
    "# Failures wait 2 s, and anvil's per-IP penalty doubles that up to 15 s\n# (for Postfix SASL too): the tests fail many logins.",
    'auth_failure_delay = 0\nservice anvil {\n  unix_listener anvil-auth-penalty {\n    mode = 0\n  }\n}',
    ...(opts.tls ? ['!include conf.d/13-mailsvc-listeners.conf'] : [listener('imap', imapPort), listener('pop3', pop3Port)]),
    ...(opts.extraPassdbFirst ? [opts.extraPassdbFirst] : []),
    '!include conf.d/10-mailsvc-auth.conf\n!include conf.d/11-mailsvc-postfix.conf\n',
    ...(opts.confD ?? []).map((f) => {
      writeFileSync(join(dir, 'conf.d', f), deployFile(`dovecot/conf.d/${f}`));
      return `!include conf.d/${f}`;
    }),
    ...(opts.extra ? [opts.extra] : []),
  ].join('\n'));
}

export async function startDovecot(opts: DovecotOptions): Promise<Dovecot> {
  const dir = daemonDir('mailsvc-dovecot-');
  const [imapPort, pop3Port, imapsPort] = opts.tls ? [await freePort(), 0, await freePort()] : [await freePort(), await freePort(), 0];
  const configPath = join(dir, 'dovecot.conf');
  let output = '';
  let exited: string | null = null;
  const logs = () => `${output}${readOr(join(dir, 'dovecot.log'))}`;
  try {
    shareSqliteDatabase(opts.dialect, opts.databaseUrl);
    writeDovecotConfig(dir, opts, imapPort, pop3Port, imapsPort);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const child = spawn(findProgram('dovecot') ?? 'dovecot', ['-F', '-c', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const done = new Promise<void>((resolve) => child.once('exit', (code, signal) => {
    exited = `dovecot exited (${code ?? signal})`;
    resolve();
  }));
  const stop = async () => {
    if (exited === null && child.kill('SIGTERM')) await Promise.race([done, sleep(5000)]);
    if (exited === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForGreeting(imapPort, '* OK', () => (exited === null ? null : `${exited}:\n${logs()}`));
  } catch (err) {
    await stop();
    throw err;
  }
  const doveadm = findProgram('doveadm') ?? 'doveadm';
  return {
    imapPort,
    imapsPort,
    pop3Port,
    listenersPath: opts.tls ? join(dir, 'conf.d/13-mailsvc-listeners.conf') : '',
    authSocket: join(dir, 'postfix-private/auth'),
    lmtpSocket: join(dir, 'postfix-private/dovecot-lmtp'),
    configPath,
    doveadm: async (args) => (await execFileP(doveadm, ['-c', configPath, ...args], { timeout: 15_000 })).stdout,
    logs,
    stop,
  };
}

export type PostfixOptions = {
  dialect: DialectName;
  databaseUrl: string;
  /** Dovecot's SASL socket (Dovecot.authSocket). */
  saslPath: string;
  /** Policy service, e.g. `inet:127.0.0.1:10031`; none: no policy check. */
  policy?: string;
  /** Dovecot's LMTP socket (Dovecot.lmtpSocket); none: accepted mail is discarded. */
  lmtp?: string;
  /** Also an unauthenticated SMTP service (as port 25 would be) on Postfix.smtpPort, for mail from outside. */
  smtp?: boolean;
  /**
   * TLS with this key and certificate chain (PEM files): the submission
   * services keep deploy/'s TLS settings (STARTTLS required on 587, implicit
   * TLS on 465). Omitted: plain-text AUTH on both, for tests only.
   */
  tls?: { key: string; chain: string };
  /** That service's port, when the caller must know it before Postfix starts (Dovecot's submission_host); else a free one. */
  smtpPort?: number;
  /**
   * mailsvc's socketmap server (its Unix socket) in place of the SQL lookup
   * tables, as install wires Postfix with SQLite: the database is then not
   * opened to Postfix's users.
   */
  maps?: string;
};
export type Postfix = { submissionPort: number; /** deploy/'s `submissions` (465) service, on a free port. */ submissionsPort: number; /** master.cf as Postfix reads it. */ masterCf: string; /** The plain SMTP port when `smtp` was asked for, else 0. */ smtpPort: number; /** Postfix's own log file (maillog_file). */ logFile: string; /** For `postfix -c <configDir> …`. */ configDir: string; logs(): string; stop(): Promise<void> };

// The services a queue needs, none chrooted; the submission service comes from deploy/.
const POSTFIX_SERVICES = `# service type  private unpriv  chroot  wakeup  maxproc command + args
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
proxymap  unix  -       -       n       -       -       proxymap
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
lmtp      unix  -       -       n       -       -       lmtp
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
`;

function writePostfixConfig(dir: string, opts: PostfixOptions, submissionPort: number, submissionsPort: number, smtpPort = 0): void {
  const type = SQL_TYPE[opts.dialect];
  const t = dbTarget(opts.dialect, opts.databaseUrl);
  const etc = join(dir, 'etc');
  mkdirSync(join(etc, 'mailsvc', type), { recursive: true });
  mkdirSync(join(dir, 'queue'));
  mkdirSync(join(dir, 'data'));
  chownTo(join(dir, 'data'), 'postfix');
  const connection: Substitutions = opts.dialect === 'sqlite'
    ? [[/^dbpath = .*$/m, `dbpath = ${t.path}`]]
    : [[/^hosts = .*$/m, `hosts = inet:${t.host}:${t.port}`], [/^dbname = .*$/m, `dbname = ${t.dbname}`],
      [/^user = .*$/m, `user = ${t.user}`], [/^password = .*$/m, `password = ${t.password}`]];
  for (const name of ['virtual-domains.cf', 'virtual-mailboxes.cf', 'virtual-alias-mailboxes.cf', 'virtual-aliases.cf', 'sender-logins.cf']) {
    writeFileSync(join(etc, 'mailsvc', type, name), deployFile(`postfix/${type}/${name}`, connection));
  }
  writeFileSync(join(etc, 'main.cf'), [
    `compatibility_level = 3.6\nqueue_directory = ${dir}/queue\ndata_directory = ${dir}/data`,
    `maillog_file = ${dir}/postfix.log\nmaillog_file_prefixes = ${dir}\nsyslog_name = postfix-test-${submissionPort}`,
    'myhostname = mail.test.invalid\nmydestination =\nalias_maps =\nalias_database =',
    'inet_interfaces = 127.0.0.1\ninet_protocols = ipv4',
    '# Nothing leaves the machine: mail for other domains is discarded.',
    'default_transport = discard:\nrelay_transport = discard:',
    ...(opts.tls ? [`smtpd_tls_chain_files = ${opts.tls.key}, ${opts.tls.chain}`] : []),
    deployFile('postfix/main.cf.mailsvc', [
      [/^mailsvc_db = .*$/m, `mailsvc_db = ${type}`],
      // The socketmap table install puts in place of each deploy/postfix/<db>/<file>.cf.
      ...(opts.maps ? Object.entries(SOCKETMAP_NAMES).map(([file, name]): [RegExp, string] => [new RegExp(`proxy:\\$\\{mailsvc_db\\}:/etc/postfix/mailsvc/\\$\\{mailsvc_db\\}/${file}\\.cf`), `proxy:socketmap:unix:${opts.maps ?? ''}:${name}`]) : []),
      ['/etc/postfix/mailsvc/', `${etc}/mailsvc/`],
      ['smtpd_sasl_path = private/auth', `smtpd_sasl_path = ${opts.saslPath}`],
      ['lmtp:unix:private/dovecot-lmtp', opts.lmtp ? `lmtp:unix:${opts.lmtp}` : 'discard:'],
      opts.policy
        ? ['inet:127.0.0.1:10031', opts.policy]
        : [/^smtpd_end_of_data_restrictions =\n.*\n/m, 'smtpd_end_of_data_restrictions =\n'],
    ]),
  ].join('\n'));
  const ports: Substitutions = [[/^submission inet/m, `127.0.0.1:${submissionPort} inet`], [/^submissions inet/m, `127.0.0.1:${submissionsPort} inet`]];
  // Without a certificate: plain-text AUTH over loopback, for tests only.
  const plain: Substitutions = [
    ['smtpd_tls_security_level=encrypt', 'smtpd_tls_security_level=none'],
    ['smtpd_tls_auth_only=yes', 'smtpd_tls_auth_only=no'],
    ['smtpd_tls_wrappermode=yes', 'smtpd_tls_wrappermode=no'],
  ];
  const services = opts.tls ? `${POSTFIX_SERVICES}tlsmgr    unix  -       -       n       1000?   1       tlsmgr\n` : POSTFIX_SERVICES;
  writeFileSync(join(etc, 'master.cf'), services + deployFile('postfix/master.cf.submission', opts.tls ? ports : [...ports, ...plain]) + (smtpPort ? `127.0.0.1:${smtpPort} inet n       -       n       -       -       smtpd\n` : ''));
}

export async function startPostfix(opts: PostfixOptions): Promise<Postfix> {
  const dir = daemonDir('mailsvc-postfix-');
  const [submissionPort, submissionsPort] = [await freePort(), await freePort()];
  const smtpPort = opts.smtp ? (opts.smtpPort ?? (await freePort())) : 0;
  const postfix = (command: string) => execFileP(findProgram('postfix') ?? 'postfix', ['-c', join(dir, 'etc'), command], { timeout: 20_000 });
  const logs = () => readOr(join(dir, 'postfix.log'));
  // Postfix leaves master.pid behind when it stops: wait for the process, not the file.
  const masterAlive = () => existsSync(`/proc/${readOr(join(dir, 'queue/pid/master.pid')).trim() || 'none'}`);
  const stop = async () => {
    await postfix('stop').catch(() => undefined);
    for (let i = 0; i < 50 && masterAlive(); i++) await sleep(100);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    if (!opts.maps) shareSqliteDatabase(opts.dialect, opts.databaseUrl);
    writePostfixConfig(dir, opts, submissionPort, submissionsPort, smtpPort);
    await postfix('start');
    await waitForGreeting(submissionPort, '220', () => null);
  } catch (err) {
    const message = `${err instanceof Error ? err.message : String(err)}\n${logs()}`;
    await stop();
    throw new Error(message);
  }
  return { submissionPort, submissionsPort, masterCf: join(dir, 'etc', 'master.cf'), smtpPort, logFile: join(dir, 'postfix.log'), configDir: join(dir, 'etc'), logs, stop };
}
