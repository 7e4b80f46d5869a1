/**
 * The installed service's HTTP API, called from inside the guest with curl
 * (the guest has no network but its own loopback), and the administrator's
 * first sign-in: password from `mailsvc admin set-password`, TOTP enrolled
 * with it, then password + TOTP code (oathtool on the host).
 */
import { expect } from 'vitest';
import type { Guest } from './nspawn.js';
import { oathtoolCode, previousStepCode } from './totp.js';

export type Reply = { status: number; body: Record<string, unknown> };
export const API = 'http://127.0.0.1:8080';

export async function api(g: Guest, method: string, path: string, auth?: string, body?: unknown): Promise<Reply> {
  const args = ['curl', '-sS', '-X', method, '-w', '\n%{http_code}', '--max-time', '60'];
  if (auth) args.push('-H', `authorization: ${auth}`);
  if (body !== undefined) args.push('-H', 'content-type: application/json', '--data-binary', '@-');
  const r = await g.run([...args, `${API}${path}`], body === undefined ? {} : { input: JSON.stringify(body) });
  if (r.code !== 0) return { status: 0, body: { curl: r.stderr.trim() } };
  const nl = r.stdout.lastIndexOf('\n');
  const text = r.stdout.slice(0, nl);
  let parsed: Record<string, unknown> = {};
  try {
    parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    parsed = { text };
  }
  return { status: Number(r.stdout.slice(nl + 1)), body: parsed };
}

/** Enrols TOTP with Basic credentials (a fresh install has no second factor yet); returns the secret. */
export async function enrolTotp(g: Guest, user: string, password: string): Promise<string> {
  const basic = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const enrol = await api(g, 'POST', '/auth/mfa/totp/enroll', basic);
  expect(enrol, JSON.stringify(enrol.body)).toMatchObject({ status: 200 });
  const secret = String(enrol.body.secret);
  // The previous step's code: the current step stays free for the sign-in.
  const confirm = await api(g, 'POST', '/auth/mfa/totp/confirm', basic, { code: (await previousStepCode(secret)) });
  expect(confirm.status, JSON.stringify(confirm.body)).toBe(200);
  return secret;
}

/** Password, then the TOTP code: a Bearer header earned with the second factor. */
export async function signIn(g: Guest, user: string, password: string, secret: string): Promise<string> {
  const challenge = await api(g, 'POST', '/auth/login', undefined, { username: user, password });
  expect(challenge.status, JSON.stringify(challenge.body)).toBe(200);
  const verify = await api(g, 'POST', '/auth/mfa/verify', undefined, { challenge_id: challenge.body.challenge_id, method: 'totp', code: oathtoolCode(secret) });
  expect(verify.status, JSON.stringify(verify.body)).toBe(200);
  return `Bearer ${String(verify.body.access_token)}`;
}

export type PanelSession = { cookie: string; csrf: string };
/** What the panel's own page sends (same origin, through nginx's Host): the panel refuses cross-site calls. */
const PANEL_HEADERS = ['-H', 'sec-fetch-site: same-origin', '-H', 'origin: https://mail.example.test', '-H', 'host: mail.example.test'];

/** A call the web panel makes: its session cookie and CSRF token; the reply's Set-Cookie too. */
export async function panelCall(g: Guest, method: string, path: string, session?: PanelSession, body?: unknown): Promise<Reply & { setCookie: string }> {
  const args = ['curl', '-sS', '-D', '-', '-X', method, '--max-time', '60', ...PANEL_HEADERS];
  if (session) args.push('-H', `cookie: ${session.cookie}`, '-H', `x-csrf-token: ${session.csrf}`);
  if (body !== undefined) args.push('-H', 'content-type: application/json', '--data-binary', '@-');
  const r = await g.run([...args, `${API}${path}`], body === undefined ? {} : { input: JSON.stringify(body) });
  if (r.code !== 0) return { status: 0, body: { curl: r.stderr.trim() }, setCookie: '' };
  const split = r.stdout.indexOf('\r\n\r\n');
  const head = r.stdout.slice(0, split);
  const text = r.stdout.slice(split + 4);
  let parsed: Record<string, unknown> = {};
  try {
    parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    parsed = { text };
  }
  return { status: Number(/^HTTP\/[\d.]+ (\d{3})/.exec(head)?.[1] ?? 0), body: parsed, setCookie: /^set-cookie: (.*)$/im.exec(head)?.[1]?.trim() ?? '' };
}

/** The panel's sign-in: password, then the TOTP code of the step at `at` (a step no other sign-in used). */
export async function panelSignIn(g: Guest, user: string, password: string, secret: string, at: number): Promise<PanelSession> {
  const challenge = await panelCall(g, 'POST', '/panel/session/login', undefined, { username: user, password });
  expect(challenge.status, JSON.stringify(challenge.body)).toBe(200);
  const done = await panelCall(g, 'POST', '/panel/session/verify', undefined, { challenge_id: challenge.body.challenge_id, method: 'totp', code: oathtoolCode(secret, at) });
  expect(done.status, JSON.stringify(done.body)).toBe(200);
  return { cookie: done.setCookie.split(';')[0] ?? '', csrf: String(done.body.csrf_token) };
}
