import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findProgram, freePort } from './mail-daemons.js';
import { waitForGreeting } from './mail-clients.js';

const execFileP = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A real Postfix smtpd on 127.0.0.1:<port> offering STARTTLS with the given certificate chain (the "port 25" of the check). */
export type TlsPostfix = { port: number; stop(): Promise<void> };

export async function startTlsPostfix(chainFile: string, key: string, hostName: string): Promise<TlsPostfix> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-pftls-'));
  chmodSync(dir, 0o755);
  const etc = join(dir, 'etc');
  mkdirSync(etc);
  mkdirSync(join(dir, 'queue'));
  mkdirSync(join(dir, 'data'));
  await execFileP('chown', ['postfix', join(dir, 'data')]);
  writeFileSync(join(etc, 'key.pem'), key, { mode: 0o600 });
  const port = await freePort();
  writeFileSync(
    join(etc, 'main.cf'),
    [
      'compatibility_level = 3.6', `queue_directory = ${dir}/queue`, `data_directory = ${dir}/data`, `maillog_file = ${dir}/postfix.log`, `maillog_file_prefixes = ${dir}`,
      `syslog_name = postfix-tls-test-${port}`, `myhostname = ${hostName}`, 'mydestination =', 'alias_maps =', 'alias_database =', 'inet_interfaces = 127.0.0.1', 'inet_protocols = ipv4',
      'default_transport = discard:', 'relay_transport = discard:', 'smtpd_tls_security_level = may', `smtpd_tls_chain_files = ${join(etc, 'key.pem')}, ${chainFile}`, '',
    ].join('\n'),
  );
  writeFileSync(
    join(etc, 'master.cf'),
    [
      `127.0.0.1:${port} inet n - n - - smtpd`,
      'cleanup unix n - n - 0 cleanup', 'qmgr unix n - n 300 1 qmgr', 'rewrite unix - - n - - trivial-rewrite', 'bounce unix - - n - 0 bounce', 'defer unix - - n - 0 bounce',
      'trace unix - - n - 0 bounce', 'discard unix - - n - - discard', 'anvil unix - - n - 1 anvil', 'tlsmgr unix - - n 1000? 1 tlsmgr', 'scache unix - - n - 1 scache', 'error unix - - n - - error',
      'postlog unix-dgram n - n - 1 postlogd', 'proxymap unix - - n - - proxymap', 'verify unix - - n - 1 verify', 'retry unix - - n - - error', 'showq unix n - n - - showq', '',
    ].join('\n'),
  );
  const postfix = (cmd: string) => execFileP(findProgram('postfix') ?? 'postfix', ['-c', etc, cmd], { timeout: 20_000 });
  const logs = () => (existsSync(join(dir, 'postfix.log')) ? readFileSync(join(dir, 'postfix.log'), 'utf8') : '');
  const stop = async () => {
    await postfix('stop').catch(() => undefined);
    await sleep(300);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await postfix('start');
    await waitForGreeting(port, '220', () => null);
  } catch (err) {
    const text = `${err instanceof Error ? err.message : String(err)}\n${logs()}`;
    await stop();
    throw new Error(text);
  }
  return { port, stop };
}
