import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findProgram, freePort } from './mail-daemons.js';
import { waitForGreeting } from './mail-clients.js';

/**
 * A real Postfix that only queues: its own configuration, queue and log in a
 * temp directory, an smtpd on 127.0.0.1:<port>, and every message it accepts
 * kept in the deferred queue (`defer_transports = smtp`: no delivery is even
 * tried, nothing leaves the machine). The machine's own Postfix is never touched.
 */

const execFileP = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type QueueMessage = { from: string; to: string[]; body?: string };
/** One `postqueue -j` line. */
export type PostqueueLine = { queue_name: string; queue_id: string; arrival_time: number; forced_expire: boolean; sender: string; recipients: { address: string; delay_reason?: string }[] };

export type QueuePostfix = {
  /** For `-c`: postqueue, postsuper, MAILSVC_POSTFIX_CONFIG_DIR. */
  configDir: string;
  smtpPort: number;
  /** Sends the messages over one SMTP session (pipelined); resolves with how many were accepted. */
  send(messages: QueueMessage[]): Promise<number>;
  /** `postqueue -j`, parsed. */
  queue(): Promise<PostqueueLine[]>;
  /** Waits until the queue holds `n` messages outside the incoming/active queues. */
  settle(n: number, timeoutMs?: number): Promise<PostqueueLine[]>;
  logs(): string;
  stop(): Promise<void>;
};

/** Why this Postfix cannot run here, or null. */
export function queuePostfixUnavailable(): string | null {
  const missing = ['postfix', 'postqueue', 'postsuper'].filter((p) => findProgram(p) === null);
  if (missing.length > 0) return `missing ${missing.join(', ')}`;
  return process.getuid?.() === 0 ? null : 'Postfix needs root to start and postsuper needs root';
}

/** master.cf's internal services for a Postfix of the tests' own (its listeners are added by each user). */
export const POSTFIX_INTERNAL_SERVICES = `pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
smtp      unix  -       -       n       -       -       smtp
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
`;

export async function startQueuePostfix(opts: { longQueueIds?: boolean } = {}): Promise<QueuePostfix> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-queue-'));
  chmodSync(dir, 0o755);
  const etc = join(dir, 'etc');
  const smtpPort = await freePort();
  for (const d of [etc, join(dir, 'queue'), join(dir, 'data')]) mkdirSync(d);
  await execFileP('chown', ['postfix', join(dir, 'data')]);
  writeFileSync(join(etc, 'main.cf'), [
    `compatibility_level = 3.6\nqueue_directory = ${dir}/queue\ndata_directory = ${dir}/data`,
    `maillog_file = ${dir}/postfix.log\nmaillog_file_prefixes = ${dir}\nsyslog_name = postfix-queue-${smtpPort}`,
    'myhostname = mail.test.invalid\nmydestination =\nalias_maps =\nalias_database =',
    'inet_interfaces = 127.0.0.1\ninet_protocols = ipv4',
    // Every message waits in the deferred queue; were one ever tried, the relay port is closed.
    'relayhost = [127.0.0.1]:2\ndefer_transports = smtp',
    'smtpd_recipient_restrictions = permit_mynetworks, reject\nmynetworks = 127.0.0.0/8',
    `enable_long_queue_ids = ${opts.longQueueIds ? 'yes' : 'no'}`,
    // Bulk fills: no pause between messages of one session, no per-client limits.
    'smtpd_client_connection_rate_limit = 0\nsmtpd_client_message_rate_limit = 0\nsmtpd_error_sleep_time = 0',
    'in_flow_delay = 0',
  ].join('\n') + '\n');
  writeFileSync(join(etc, 'master.cf'), `${POSTFIX_INTERNAL_SERVICES}127.0.0.1:${smtpPort} inet n - n - - smtpd\n`);
  const postfix = (command: string) => execFileP(findProgram('postfix') ?? 'postfix', ['-c', etc, command], { timeout: 20_000 });
  const logs = () => (existsSync(join(dir, 'postfix.log')) ? readFileSync(join(dir, 'postfix.log'), 'utf8') : '');
  const masterAlive = () => {
    const pidFile = join(dir, 'queue/pid/master.pid');
    return existsSync(pidFile) && existsSync(`/proc/${readFileSync(pidFile, 'utf8').trim() || 'none'}`);
  };
  const stop = async () => {
    await postfix('stop').catch(() => undefined);
    for (let i = 0; i < 50 && masterAlive(); i++) await sleep(100);
    rmSync(dir, { recursive: true, force: true });
  };
  const queue = async (): Promise<PostqueueLine[]> => {
    const { stdout } = await execFileP('postqueue', ['-c', etc, '-j'], { maxBuffer: 256 * 1024 * 1024 });
    return stdout.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as PostqueueLine);
  };
  try {
    await postfix('start');
    await waitForGreeting(smtpPort, '220', () => null);
  } catch (err) {
    const message = `${err instanceof Error ? err.message : String(err)}\n${logs()}`;
    await stop();
    throw new Error(message);
  }
  return {
    configDir: etc,
    smtpPort,
    send: (messages) => smtpSend(smtpPort, messages),
    queue,
    async settle(n, timeoutMs = 120_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const q = await queue();
        if (q.length >= n && q.every((m) => m.queue_name !== 'incoming' && m.queue_name !== 'active' && m.queue_name !== 'maildrop')) return q;
        if (Date.now() > until) throw new Error(`the queue holds ${q.length} settled of ${n} messages\n${logs().slice(-2000)}`);
        await sleep(200);
      }
    },
    logs,
    stop,
  };
}

/**
 * A minimal SMTP client for loopback: one session, every message's MAIL,
 * RCPTs and DATA pipelined (Postfix announces PIPELINING), then its body.
 */
export function smtpSend(port: number, messages: QueueMessage[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    let buf = '';
    let waiting: { n: number; got: string[]; done: (codes: string[]) => void } | null = null;
    const expect = (n: number) => new Promise<string[]>((done) => ((waiting = { n, got: [], done }), drain()));
    const drain = () => {
      let nl: number;
      while (waiting && (nl = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 2);
        if (line[3] === '-') continue;
        waiting.got.push(line.slice(0, 3));
        if (waiting.got.length === waiting.n) {
          const w = waiting;
          waiting = null;
          w.done(w.got);
        }
      }
    };
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => ((buf += d), drain()));
    sock.on('error', reject);
    void (async () => {
      await expect(1);
      sock.write('EHLO client.test.invalid\r\n');
      await expect(1);
      let accepted = 0;
      for (const [i, m] of messages.entries()) {
        sock.write(`MAIL FROM:<${m.from}>\r\n${m.to.map((t) => `RCPT TO:<${t}>\r\n`).join('')}DATA\r\n`);
        const codes = await expect(2 + m.to.length);
        if (codes.at(-1) !== '354') continue;
        const body = (m.body ?? `Message ${i} for the queue tests.`).replace(/^\./gm, '..');
        sock.write(`From: <${m.from}>\r\nTo: <${m.to[0]}>\r\nSubject: queue test ${i}\r\n\r\n${body}\r\n.\r\n`);
        if ((await expect(1))[0] === '250') accepted += 1;
      }
      sock.end('QUIT\r\n');
      resolve(accepted);
    })().catch(reject);
  });
}
