import { execFile, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findProgram, freePort } from './mail-daemons.js';
import { waitForGreeting } from './mail-clients.js';

const execFileP = promisify(execFile);
const readOr = (p: string): string => (existsSync(p) ? readFileSync(p, 'utf8') : '');

/** Why real Postfix, Dovecot and nginx cannot serve certificates here, or null. */
export function tlsDaemonsUnavailable(): string | null {
  const missing = ['postfix', 'dovecot', 'doveadm', 'doveconf', 'nginx', 'openssl'].filter((p) => findProgram(p) === null);
  if (missing.length > 0) return `missing ${missing.join(', ')} (Debian packages postfix, dovecot-core dovecot-imapd dovecot-pop3d, nginx, openssl)`;
  return process.getuid?.() === 0 ? null : 'Postfix, Dovecot and nginx need root to start';
}

/**
 * Real Postfix (smtp and submission with STARTTLS, smtps with implicit TLS),
 * Dovecot (imap, pop3 with STARTTLS; imaps, pop3s) and nginx (https), each
 * from its own configuration in one temp directory, on free ports of
 * 127.0.0.1, all serving the first certificate given. The helper's settings
 * (`helperEnv`) point at these configurations; the service manager the
 * helper restarts daemons with (MAILSVC_SERVICE_MANAGER) restarts these
 * processes, and records each call in `restarts()`. Dovecot's reload can be
 * made a no-op (`dovecotReloadIgnored`: the helper's doveadm is a wrapper
 * that ignores `reload`), and its restart too (`dovecotRestartIgnored`).
 */
export type TlsDaemons = {
  dir: string;
  ports: { smtp: number; submission: number; smtps: number; imap: number; imaps: number; pop3: number; pop3s: number; https: number };
  /** MAILSVC_DOCTOR_TLS_PORTS for these ports. */
  portList: string;
  helperEnv: Record<string, string>;
  restarts(): string[];
  doveadmReloads(): number;
  setDovecotRestartIgnored(on: boolean): void;
  logs(): string;
  stop(): Promise<void>;
};

const POSTFIX_SERVICES = [
  'cleanup unix n - n - 0 cleanup', 'qmgr unix n - n 300 1 qmgr', 'rewrite unix - - n - - trivial-rewrite', 'bounce unix - - n - 0 bounce', 'defer unix - - n - 0 bounce',
  'trace unix - - n - 0 bounce', 'discard unix - - n - - discard', 'anvil unix - - n - 1 anvil', 'tlsmgr unix - - n 1000? 1 tlsmgr', 'scache unix - - n - 1 scache', 'error unix - - n - - error',
  'postlog unix-dgram n - n - 1 postlogd', 'proxymap unix - - n - - proxymap', 'verify unix - - n - 1 verify', 'retry unix - - n - - error', 'showq unix n - n - - showq',
];

async function waitFor(what: string, ok: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} within ${ms} ms`);
}

const alive = (pidFile: string): boolean => {
  const pid = Number(readOr(pidFile).trim());
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

export async function startTlsDaemons(first: { chain: string; key: string }, hostName: string): Promise<TlsDaemons> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-tlsd-'));
  chmodSync(dir, 0o755);
  const names = ['smtp', 'submission', 'smtps', 'imap', 'imaps', 'pop3', 'pop3s', 'https'] as const;
  const ports = {} as TlsDaemons['ports'];
  for (const n of names) ports[n] = await freePort();
  const postfixDir = join(dir, 'postfix');
  const dovecotDir = join(dir, 'dovecot');
  const nginxDir = join(dir, 'nginx');
  for (const d of [postfixDir, join(dir, 'queue'), join(dir, 'data'), join(dovecotDir, 'conf.d'), join(nginxDir, 'snippets'), join(dir, 'tls'), join(dir, 'bin')]) mkdirSync(d, { recursive: true });
  await execFileP('chown', ['postfix', join(dir, 'data')]);
  // The first certificate, as an administrator's own files outside mailsvc's directory.
  writeFileSync(join(dir, 'first.chain.pem'), readFileSync(first.chain));
  writeFileSync(join(dir, 'first.key.pem'), readFileSync(first.key), { mode: 0o600 });
  const [chain0, key0] = [join(dir, 'first.chain.pem'), join(dir, 'first.key.pem')];

  writeFileSync(join(postfixDir, 'main.cf'), [
    'compatibility_level = 3.6', `queue_directory = ${dir}/queue`, `data_directory = ${dir}/data`, `maillog_file = ${dir}/postfix.log`, `maillog_file_prefixes = ${dir}`,
    `syslog_name = postfix-tlsd-${ports.smtp}`, `myhostname = ${hostName}`, 'mydestination =', 'alias_maps =', 'alias_database =', 'inet_interfaces = 127.0.0.1', 'inet_protocols = ipv4',
    'default_transport = discard:', 'relay_transport = discard:', 'smtpd_tls_security_level = may', `smtpd_tls_chain_files = ${key0}, ${chain0}`, '',
  ].join('\n'));
  writeFileSync(join(postfixDir, 'master.cf'), [
    `127.0.0.1:${ports.smtp} inet n - n - - smtpd`,
    `127.0.0.1:${ports.submission} inet n - n - - smtpd`,
    `127.0.0.1:${ports.smtps} inet n - n - - smtpd`, '  -o smtpd_tls_wrappermode=yes', '  -o smtpd_tls_security_level=encrypt',
    ...POSTFIX_SERVICES, '',
  ].join('\n'));

  const listener = (svc: string, plain: number, secure: number) =>
    `service ${svc}-login {\n  inet_listener ${svc} {\n    port = ${plain}\n  }\n  inet_listener ${svc}s {\n    port = ${secure}\n    ssl = yes\n  }\n}`;
  const dovecotConf = join(dovecotDir, 'dovecot.conf');
  writeFileSync(dovecotConf, [
    `base_dir = ${dir}/dovecot-run\nstate_dir = ${dir}/dovecot-state\nlog_path = ${dir}/dovecot.log`,
    'protocols = imap pop3\nlisten = 127.0.0.1\nssl = yes\nssl_min_protocol = TLSv1.2',
    `passdb {\n  driver = static\n  args = nopassword=y\n}\nuserdb {\n  driver = static\n  args = uid=nobody gid=nogroup home=${dir}/home/%u\n}`,
    listener('imap', ports.imap, ports.imaps),
    listener('pop3', ports.pop3, ports.pop3s),
    // Debian's dovecot.conf includes conf.d/*.conf last; the first certificate is set here, before it.
    `ssl_cert = <${chain0}\nssl_key = <${key0}`,
    '!include_try conf.d/*.conf', '',
  ].join('\n'));

  const nginxConf = join(nginxDir, 'nginx.conf');
  writeFileSync(join(nginxDir, 'snippets', 'mailsvc-tls.conf'), `ssl_certificate ${chain0};\nssl_certificate_key ${key0};\n`);
  writeFileSync(nginxConf, [
    `pid ${nginxDir}/nginx.pid;`, `error_log ${nginxDir}/error.log;`, 'worker_processes 1;', 'events { worker_connections 64; }',
    'http {', `  access_log off;\n  client_body_temp_path ${nginxDir}/tmp;\n  proxy_temp_path ${nginxDir}/tmp;\n  fastcgi_temp_path ${nginxDir}/tmp;\n  uwsgi_temp_path ${nginxDir}/tmp;\n  scgi_temp_path ${nginxDir}/tmp;`,
    `  server {\n    listen 127.0.0.1:${ports.https} ssl;\n    server_name ${hostName};\n    include snippets/mailsvc-tls.conf;\n    location / { return 200 "ok\\n"; }\n  }`,
    '}', '',
  ].join('\n'));
  mkdirSync(join(nginxDir, 'tmp'));

  const postfix = findProgram('postfix') ?? 'postfix';
  const dovecot = findProgram('dovecot') ?? 'dovecot';
  const doveadm = findProgram('doveadm') ?? 'doveadm';
  const nginx = findProgram('nginx') ?? 'nginx';
  const dovecotPid = join(dir, 'dovecot-run', 'master.pid');
  const nginxPid = join(nginxDir, 'nginx.pid');
  const restartsLog = join(dir, 'restarts.log');
  const reloadsLog = join(dir, 'doveadm-reloads.log');
  const ignoreRestart = join(dir, 'dovecot-restart-ignored');

  // The helper's doveadm: `reload` does nothing (a Dovecot that does not pick up a new certificate on reload); the rest is the real doveadm.
  const doveadmWrapper = join(dir, 'bin', 'doveadm');
  writeFileSync(doveadmWrapper, `#!/bin/sh\nfor a in "$@"; do if [ "$a" = reload ]; then echo reload >> ${reloadsLog}; exit 0; fi; done\nexec ${doveadm} "$@"\n`, { mode: 0o755 });
  const waitGone = (pidFile: string) => `pid=$(cat ${pidFile} 2>/dev/null); if [ -n "$pid" ]; then i=0; while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; fi`;
  // systemctl's stand-in: `restart <unit>`, for these processes.
  const manager = join(dir, 'bin', 'service-manager');
  writeFileSync(manager, [
    '#!/bin/sh', `echo "$*" >> ${restartsLog}`, '[ "$1" = restart ] || exit 2', 'case "$2" in',
    `  postfix.service) ${postfix} -c ${postfixDir} stop >/dev/null 2>&1; ${waitGone(join(dir, 'queue', 'pid', 'master.pid'))}; exec ${postfix} -c ${postfixDir} start </dev/null >/dev/null 2>&1 ;;`,
    `  dovecot.service) [ -e ${ignoreRestart} ] && exit 0; ${doveadm} -c ${dovecotConf} stop >/dev/null 2>&1; ${waitGone(dovecotPid)}; exec ${dovecot} -c ${dovecotConf} </dev/null >/dev/null 2>&1 ;;`,
    `  nginx.service) kill -QUIT $(cat ${nginxPid}) 2>/dev/null; ${waitGone(nginxPid)}; setsid ${nginx} -c ${nginxConf} -g 'daemon off;' </dev/null >/dev/null 2>&1 & exit 0 ;;`,
    '  *) exit 3 ;;', 'esac', '',
  ].join('\n'), { mode: 0o755 });

  const logs = () => [readOr(join(dir, 'postfix.log')), readOr(join(dir, 'dovecot.log')), readOr(join(nginxDir, 'error.log'))].join('\n');
  const stop = async (): Promise<void> => {
    await execFileP(postfix, ['-c', postfixDir, 'stop']).catch(() => undefined);
    await execFileP(doveadm, ['-c', dovecotConf, 'stop']).catch(() => undefined);
    const pid = Number(readOr(nginxPid).trim());
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGQUIT');
      } catch {
        // already gone
      }
    }
    await waitFor('the daemons stopped', () => !alive(dovecotPid) && !alive(nginxPid) && !alive(join(dir, 'queue', 'pid', 'master.pid')), 30_000).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await execFileP(postfix, ['-c', postfixDir, 'start'], { timeout: 30_000 });
    // Dovecot forks into the background: wait for the command, not for its output to close.
    await new Promise<void>((resolve, reject) => {
      const c = spawn(dovecot, ['-c', dovecotConf], { stdio: 'ignore' });
      c.once('error', reject);
      c.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`dovecot exited ${code ?? 'by a signal'}`))));
    });
    const child = spawn('setsid', [nginx, '-c', nginxConf, '-g', 'daemon off;'], { stdio: 'ignore', detached: true });
    child.unref();
    await waitForGreeting(ports.smtp, '220', () => null);
    await waitForGreeting(ports.imap, '* OK', () => null);
    await waitFor('nginx wrote its pid file', () => alive(nginxPid));
  } catch (err) {
    const text = `${err instanceof Error ? err.message : String(err)}\n${logs()}`;
    await stop();
    throw new Error(text);
  }
  return {
    dir,
    ports,
    portList: names.map((n) => `${n}:${ports[n]}`).join(','),
    helperEnv: {
      MAILSVC_POSTFIX_CONFIG_DIR: postfixDir,
      MAILSVC_DOVECOT_CONFIG: dovecotConf,
      MAILSVC_DOVEADM: doveadmWrapper,
      MAILSVC_NGINX_CONFIG: nginxConf,
      MAILSVC_NGINX_TLS_SNIPPET: join(nginxDir, 'snippets', 'mailsvc-tls.conf'),
      MAILSVC_TLS_DIR: join(dir, 'tls'),
      MAILSVC_TLS_GROUP: 'ssl-cert',
      MAILSVC_SERVICE_MANAGER: manager,
    },
    restarts: () => readOr(restartsLog).split('\n').filter(Boolean),
    doveadmReloads: () => readOr(reloadsLog).split('\n').filter(Boolean).length,
    setDovecotRestartIgnored: (on) => (on ? writeFileSync(ignoreRestart, '') : rmSync(ignoreRestart, { force: true })),
    logs,
    stop,
  };
}
