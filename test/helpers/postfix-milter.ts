import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findProgram } from './mail-daemons.js';

const execFileP = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A real Postfix whose locally submitted mail (sendmail → pickup → cleanup)
 * passes a milter (Rspamd's proxy worker) and is then held (header_checks
 * HOLD), so the test reads the message exactly as Postfix would send it,
 * signature headers included. Nothing leaves the machine.
 */
export type MilterPostfix = { send(from: string, to: string, message: string): Promise<string>; stop(): Promise<void> };

const MASTER_CF = `pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
anvil     unix  -       -       n       -       1       anvil
postlog   unix-dgram n  -       n       -       1       postlogd
`;

export async function startMilterPostfix(milter: string): Promise<MilterPostfix> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-pfmilter-'));
  // Postfix's unprivileged processes must reach their directories.
  chmodSync(dir, 0o755);
  const etc = join(dir, 'etc');
  mkdirSync(etc);
  mkdirSync(join(dir, 'queue'));
  mkdirSync(join(dir, 'data'));
  await execFileP('chown', ['postfix', join(dir, 'data')]);
  writeFileSync(join(etc, 'header_checks'), '/^Subject:/ HOLD\n');
  writeFileSync(
    join(etc, 'main.cf'),
    [
      'compatibility_level = 3.6',
      `queue_directory = ${dir}/queue`,
      `data_directory = ${dir}/data`,
      `maillog_file = ${dir}/postfix.log`,
      `maillog_file_prefixes = ${dir}`,
      `syslog_name = postfix-milter-test`,
      'myhostname = mail.test.invalid',
      'mydestination =',
      'alias_maps =',
      'alias_database =',
      'inet_interfaces = loopback-only',
      'inet_protocols = ipv4',
      'default_transport = discard:',
      'relay_transport = discard:',
      `non_smtpd_milters = inet:${milter}`,
      'milter_default_action = tempfail',
      'milter_protocol = 6',
      `header_checks = regexp:${etc}/header_checks`,
      '',
    ].join('\n'),
  );
  writeFileSync(join(etc, 'master.cf'), MASTER_CF);
  const postfix = (cmd: string) => execFileP(findProgram('postfix') ?? 'postfix', ['-c', etc, cmd], { timeout: 20_000 });
  const logs = () => (existsSync(join(dir, 'postfix.log')) ? readFileSync(join(dir, 'postfix.log'), 'utf8') : '');
  await postfix('start').catch((err: { stderr?: string; message: string }) => {
    throw new Error(`postfix start: ${err.stderr ?? err.message}\n${logs()}`);
  });
  return {
    async send(from, to, message) {
      await new Promise<void>((resolve, reject) => {
        const p = execFile(findProgram('sendmail') ?? '/usr/sbin/sendmail', ['-C', etc, '-f', from, '-i', to], { timeout: 20_000 }, (err) => (err ? reject(err) : resolve()));
        p.stdin?.end(message);
      });
      // The held message, once cleanup (and the milter) is done with it.
      for (let i = 0; i < 200; i++) {
        const list = await execFileP('postqueue', ['-c', etc, '-j'], { timeout: 10_000 }).then((r) => r.stdout).catch(() => '');
        const held = list.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { queue_name: string; queue_id: string }).find((e) => e.queue_name === 'hold');
        if (held) {
          const { stdout } = await execFileP('postcat', ['-c', etc, '-q', '-bh', held.queue_id], { timeout: 10_000 });
          await execFileP('postsuper', ['-c', etc, '-d', held.queue_id]);
          return stdout;
        }
        await sleep(100);
      }
      throw new Error(`no held message: ${logs().slice(-3000)}`);
    },
    async stop() {
      await postfix('stop').catch(() => undefined);
      await sleep(300);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
