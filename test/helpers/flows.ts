import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { ADMIN_PASSWORD, ADMIN_USER } from './app.js';
import { oathtoolCode, previousStepCode } from './totp.js';

type Json = Record<string, unknown>;

export async function post(t: TestApp, url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await t.app.inject({ method: 'POST', url, payload: body as Json, headers: { ...headers } });
  return { status: res.statusCode, body: res.json<Json>(), headers: res.headers };
}

export async function call(t: TestApp, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, auth: string, body?: unknown) {
  const res = await t.app.inject({ method, url, headers: { authorization: auth }, ...(body === undefined ? {} : { payload: body as Json }) });
  // A 204 has no body at all.
  return { status: res.statusCode, body: res.body === '' ? {} : res.json<Json>(), headers: res.headers };
}

export function login(t: TestApp, password = ADMIN_PASSWORD, username = ADMIN_USER, ip?: string) {
  return t.app
    .inject({ method: 'POST', url: '/auth/login', payload: { username, password }, ...(ip ? { remoteAddress: ip } : {}) })
    .then((r) => ({ status: r.statusCode, body: r.json<Json>(), headers: r.headers }));
}

/** Enrols and confirms TOTP with Basic credentials; returns the secret. */
export async function enableTotp(t: TestApp, at?: number): Promise<string> {
  const enroll = await call(t, 'POST', '/auth/mfa/totp/enroll', t.basic());
  expect(enroll.status).toBe(200);
  const secret = String(enroll.body.secret);
  // A code of the previous step, so the step of "now" stays free for sign-in. "Now" is read after the
  // enrolment answered: read before it, a slow enrolment (argon2 under load) could end two steps later,
  // and the code would be refused as too old. On the real clock, with less than 5 s of the step left,
  // previousStepCode waits for the next step: the confirm's own Basic check (argon2) may take that long.
  const code = at === undefined ? await previousStepCode(secret) : oathtoolCode(secret, at - 30_000);
  const confirm = await call(t, 'POST', '/auth/mfa/totp/confirm', t.basic(), { code });
  expect(confirm.status).toBe(200);
  expect(confirm.body.totp_enabled).toBe(true);
  return secret;
}

/** Password, then the TOTP code of `at`: an MFA-verified Bearer header. */
export async function signInWithTotp(t: TestApp, secret: string, at = Date.now()): Promise<string> {
  const challenge = await login(t);
  expect(challenge.status).toBe(200);
  const verify = await post(t, '/auth/mfa/verify', { challenge_id: challenge.body.challenge_id, method: 'totp', code: oathtoolCode(secret, at) });
  expect(verify.status).toBe(200);
  return `Bearer ${String(verify.body.access_token)}`;
}
