import { createConnection } from 'node:net';
import type { Finding } from './run.js';

export type Listen = { path: string } | { host: string; port: number };
const where = (l: Listen): string => ('path' in l ? `unix:${l.path}` : `${l.host}:${l.port}`);
const START = "start the service (systemctl start mailsvc.service): it serves the policy service, Postfix's lookup tables and the auth hook";

/** Sends `request` and gives the first answer that `done` accepts (or rejects at the time limit or a close). */
function ask(l: Listen, request: string, done: (text: string) => boolean, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = 'path' in l ? createConnection(l.path) : createConnection({ host: l.host, port: l.port });
    let text = '';
    const timer = setTimeout(() => finish(new Error(`no answer within ${ms} ms`)), ms);
    const finish = (err?: Error) => {
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else resolve(text);
    };
    sock.once('connect', () => sock.write(request));
    sock.on('data', (d) => {
      text += d.toString('utf8');
      if (done(text) || text.length > 4096) finish();
    });
    sock.once('error', (err) => finish(err));
    sock.once('close', () => finish(new Error('the connection was closed without an answer')));
  });
}

/** `judge` may turn an expected answer into another finding (null: ok). */
async function answering(l: Listen, request: string, expect: RegExp, ms: number, judge: (text: string) => Finding | null = () => null): Promise<Finding> {
  try {
    const text = await ask(l, request, (t) => expect.test(t) || t.includes('\n'), ms);
    if (!expect.test(text)) return { status: 'fail', detail: `${where(l)} answered something else: ${JSON.stringify(text.slice(0, 60))}`, fix: 'another program holds this address: stop it, or move the setting' };
    return judge(text) ?? { status: 'ok', detail: `answers on ${where(l)}`, fix: null };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { status: 'fail', detail: `no socket at ${where(l)}`, fix: START };
    if (code === 'ECONNREFUSED') return { status: 'fail', detail: `nothing listens on ${where(l)}`, fix: START };
    if (code === 'EACCES') return { status: 'fail', detail: `this user may not connect to ${where(l)} (permission denied)`, fix: 'run mailsvc doctor as root, or check the socket group setting' };
    return { status: 'fail', detail: `${where(l)}: ${(err as Error).message}`, fix: START };
  }
}

/**
 * The Postfix policy service answers a harmless request: a connection with no
 * authenticated sender, which is never counted and always answered DUNNO.
 */
export function policyCheck(l: Listen | null, ms: number): Promise<Finding> {
  if (!l) return Promise.resolve({ status: 'ok', detail: 'off (MAILSVC_POLICY_LISTEN=off): no send limits are enforced', fix: null });
  const req = 'request=smtpd_access_policy\nprotocol_state=CONNECT\nprotocol_name=SMTP\nclient_address=127.0.0.1\nclient_name=localhost\n\n';
  return answering(l, req, /^action=\S+/m, ms);
}

/**
 * Postfix's lookup tables (socketmap) answer a harmless lookup: a domain that
 * cannot exist (.invalid), which is never found. A TEMP answer means the
 * database fails: Postfix then defers all mail for your domains.
 */
export function mapsCheck(l: Listen | null, ms: number): Promise<Finding> {
  if (!l) return Promise.resolve({ status: 'ok', detail: 'off (MAILSVC_MAPS_LISTEN=off): Postfix reads its lookup tables from the database itself', fix: null });
  const request = 'domains doctor.mailsvc.invalid';
  return answering(l, `${request.length}:${request},`, /^\d+:(NOTFOUND|OK|TEMP|PERM)\b.*,$/s, ms, (text) =>
    /^\d+:TEMP\b/.test(text) ? { status: 'fail', detail: `${where(l)} answers, but its lookups fail: Postfix defers mail for your domains`, fix: "see the database check and mailsvc's log (journalctl -u mailsvc)" } : null);
}

/** The Dovecot auth hook answers a harmless line: not a sign-in (no account is asked, nothing is counted), answered ERROR. */
export async function hookCheck(listens: readonly Listen[], ms: number): Promise<Finding> {
  if (listens.length === 0) return { status: 'ok', detail: 'off (MAILSVC_MAIL_AUTH_SOCKET=off): Dovecot does not ask mailsvc', fix: null };
  const found = await Promise.all(listens.map((l) => answering(l, 'PING\n', /^(OK|FAIL|ERROR)\b/m, ms)));
  return found.find((f) => f.status !== 'ok') ?? { status: 'ok', detail: found.map((f) => f.detail).join('; '), fix: null };
}
