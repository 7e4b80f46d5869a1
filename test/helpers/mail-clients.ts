import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { createInterface } from 'node:readline';

/**
 * Mail clients nobody here wrote: Python's imaplib and poplib, and swaks
 * (credentials go to Python on stdin, not argv); and a banner probe to tell
 * when a daemon is ready.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves once a server on the port greets with a line starting with `greeting`. */
export async function waitForGreeting(port: number, greeting: string, failed: () => string | null): Promise<void> {
  for (const deadline = Date.now() + 20_000; ; await sleep(100)) {
    const why = failed();
    if (why !== null) throw new Error(why);
    const line = await new Promise<string>((resolve) => {
      const s = connect(port, '127.0.0.1').setTimeout(2000, () => s.destroy());
      let buf = '';
      s.on('data', (d) => {
        buf += d.toString();
        if (buf.includes('\n')) s.destroy();
      });
      s.on('error', () => undefined).on('close', () => resolve(buf));
    });
    if (line.startsWith(greeting)) return;
    if (Date.now() > deadline) throw new Error(`no ${greeting} greeting on 127.0.0.1:${port}`);
  }
}

const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

export type LoginResult = { ok: boolean; message: string };

const LOGIN_SCRIPTS = {
  imap: `
import imaplib, json, sys
a = json.load(sys.stdin)
try:
    c = imaplib.IMAP4('127.0.0.1', a['port'], timeout=15)
    typ, data = c.login(a['user'], a['password'])
    print('OK ' + data[0].decode('utf-8', 'replace'))
    c.logout()
except imaplib.IMAP4.error as e:
    print('FAIL ' + str(e))
`,
  pop3: `
import json, poplib, sys
a = json.load(sys.stdin)
try:
    c = poplib.POP3('127.0.0.1', a['port'], timeout=15)
    c.user(a['user'])
    print('OK ' + c.pass_(a['password']).decode('utf-8', 'replace'))
    c.quit()
except poplib.error_proto as e:
    print('FAIL ' + str(e))
`,
};

function python(script: string, input: object): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(PYTHON, ['-c', script], { timeout: 20_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`python client failed: ${err.message}\n${stderr}`));
      else resolve(stdout.trim());
    });
    child.stdin?.end(JSON.stringify(input));
  });
}

async function login(kind: keyof typeof LOGIN_SCRIPTS, port: number, user: string, password: string): Promise<LoginResult> {
  const out = await python(LOGIN_SCRIPTS[kind], { port, user, password });
  return { ok: out.startsWith('OK '), message: out };
}

export const imapLogin = (port: number, user: string, password: string) => login('imap', port, user, password);
export const pop3Login = (port: number, user: string, password: string) => login('pop3', port, user, password);

const SESSION_SCRIPT = `
import imaplib, json, sys
a = json.loads(sys.stdin.readline())
try:
    c = imaplib.IMAP4('127.0.0.1', a['port'], timeout=15)
    c.login(a['user'], a['password'])
except Exception as e:
    print('LOGIN_FAILED ' + str(e), flush=True)
    sys.exit(0)
print('LOGGED_IN', flush=True)
for line in sys.stdin:
    if line.strip() == 'NOOP':
        try:
            c.noop()
            print('NOOP_OK', flush=True)
        except Exception as e:
            print('NOOP_FAIL ' + str(e).replace('\\n', ' '), flush=True)
    else:
        try:
            c.logout()
        except Exception:
            pass
        break
`;

export type ImapSession = {
  /** True while the server still answers NOOP on this connection. */
  noop(): Promise<boolean>;
  close(): Promise<void>;
};

/** An IMAP connection that stays logged in until closed (or kicked). */
export async function imapSession(port: number, user: string, password: string): Promise<ImapSession> {
  const child = spawn(PYTHON, ['-c', SESSION_SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines = createInterface({ input: child.stdout });
  const waiting: Array<(line: string) => void> = [];
  const queued: string[] = [];
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  lines.on('line', (line) => {
    const next = waiting.shift();
    if (next) next(line);
    else queued.push(line);
  });
  lines.on('close', () => {
    for (const w of waiting.splice(0)) w(`EXITED ${stderr}`);
  });
  const nextLine = (): Promise<string> => {
    const line = queued.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (child.exitCode !== null) return Promise.resolve(`EXITED ${stderr}`);
    return new Promise((resolve) => waiting.push(resolve));
  };
  child.stdin.write(`${JSON.stringify({ port, user, password })}\n`);
  const first = await nextLine();
  if (first !== 'LOGGED_IN') {
    child.kill();
    throw new Error(`IMAP session for ${user} did not log in: ${first}`);
  }
  return {
    noop: async () => {
      if (child.exitCode !== null || !child.stdin.writable) return false;
      child.stdin.write('NOOP\n');
      return (await nextLine()) === 'NOOP_OK';
    },
    close: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.stdin.end('QUIT\n');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
        child.kill();
      }
    },
  };
}

export type SwaksResult = {
  ok: boolean;
  /** The server's reply code that decided the outcome: '250' when queued, else the failing reply ('450', '535', …). */
  code: string;
  output: string;
};

/**
 * One message through SMTP AUTH PLAIN on 127.0.0.1:<port>, start to QUIT;
 * `quitAfter: 'AUTH'` stops after authenticating (code '235' when accepted).
 */
export function swaksSend(opts: { port: number; user: string; pass: string; from: string; to: string; quitAfter?: 'AUTH' }): Promise<SwaksResult> {
  const args = [
    '--server', `127.0.0.1:${opts.port}`,
    '--auth', 'PLAIN', '--auth-user', opts.user, '--auth-password', opts.pass,
    '--from', opts.from, '--to', opts.to,
    '--timeout', '15', '--suppress-data',
    ...(opts.quitAfter ? ['--quit-after', opts.quitAfter] : []),
  ];
  return new Promise((resolve) => {
    execFile('swaks', args, { timeout: 30_000 }, (err, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      const failed = /^<\*\*\s+(\d{3})/m.exec(output);
      const queued = opts.quitAfter ? /^<-\s+(235)\s/m.exec(output) : /^<-\s+(250)\s.*queued/im.exec(output);
      resolve({ ok: err === null && queued !== null, code: failed?.[1] ?? queued?.[1] ?? '', output });
    });
  });
}
