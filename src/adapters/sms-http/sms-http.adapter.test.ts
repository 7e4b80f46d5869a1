import { describe, it, expect, beforeAll, afterAll, beforeEach } from 'vitest';
import { AppError } from '../../shared/errors.js';
import { checkPublicHttpsUrl, defaultResolver, type Resolver } from '../outbound/address-policy.js';
import { OutboundRefused, postJsonPinned, MAX_RESPONSE_BYTES } from '../outbound/pinned-request.js';
import { buildSmsTargetUrl, sendSms, SmsSendFailure, type SmsSendRequest } from './sms-http.adapter.js';
import { probeTlsHandshake, startFakeSmsProvider, testCaTrustProblem, type FakeSmsProvider } from '../../../test/helpers/fake-sms-provider.js';

const SECRET = 'cs-very-secret-4711';
const API_KEY = 'ak-very-secret-0815';
const PHONE = '+4915112345678';
const MESSAGE = 'Your mailsvc code is 493817';

let provider: FakeSmsProvider;

beforeAll(async () => {
  // Fail every test with the real cause rather than with a TLS error each.
  const problem = testCaTrustProblem();
  if (problem) throw new Error(problem);
  provider = await startFakeSmsProvider();
});
afterAll(async () => {
  await provider?.close();
});
beforeEach(() => provider.reset());

function smsRequest(over: Partial<SmsSendRequest> = {}): SmsSendRequest {
  return {
    baseUrl: `${provider.origin}/api/`,
    sendPath: '/v1/sms/send',
    clientId: 'client-1',
    clientSecret: SECRET,
    apiKey: API_KEY,
    to: PHONE,
    message: MESSAGE,
    from: 'mailsvc',
    route: 'otp',
    ...over,
  };
}

const allowProvider = () => ({ allowHosts: [provider.hostPort] });

/** Resolver spy: answers from `answers` (one list per call, the last repeats) and counts calls. */
function scriptedResolver(...answers: string[][]): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const fn = async (host: string) => {
    calls.push(host);
    return answers[Math.min(calls.length, answers.length) - 1] ?? [];
  };
  return Object.assign(fn, { calls });
}

async function catchError(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

function expectProviderError(err: unknown): asserts err is AppError {
  expect(err).toBeInstanceOf(AppError);
  const e = err as AppError;
  expect(e.code).toBe('upstream');
  expect(e.detail).toBe('SMS provider error');
  expect(e.message).toBe('SMS provider error');
  const cause = e.cause as Error | undefined;
  const text = [e.message, e.stack, JSON.stringify(e), String(cause), cause?.stack, JSON.stringify(cause)].join('\n');
  for (const secret of [SECRET, API_KEY, PHONE, MESSAGE, '493817', '4915112345678']) {
    expect(text).not.toContain(secret);
  }
}

describe('sendSms against a local HTTPS provider', () => {
  it('sends the three headers, base_url + send_path and the JSON body exactly', async () => {
    await sendSms(smsRequest(), allowProvider());
    expect(provider.requests).toHaveLength(1);
    const [req] = provider.requests;
    expect(req?.method).toBe('POST');
    expect(req?.path).toBe('/api/v1/sms/send');
    expect(req?.headers['x-client-id']).toBe('client-1');
    expect(req?.headers['x-client-secret']).toBe(SECRET);
    expect(req?.headers['x-api-key']).toBe(API_KEY);
    expect(req?.headers['content-type']).toBe('application/json');
    expect(req?.body).toEqual({ to: PHONE, message: MESSAGE, from: 'mailsvc', route: 'otp' });
    expect(Object.keys(req?.body as object)).toEqual(['to', 'message', 'from', 'route']);
  });

  it('sends empty headers for missing credentials and a null from', async () => {
    await sendSms(smsRequest({ clientId: null, clientSecret: null, apiKey: null, from: null }), allowProvider());
    const [req] = provider.requests;
    expect(req?.headers['x-client-id']).toBe('');
    expect(req?.headers['x-client-secret']).toBe('');
    expect(req?.headers['x-api-key']).toBe('');
    expect(req?.body).toEqual({ to: PHONE, message: MESSAGE, from: null, route: 'otp' });
  });

  it('turns a 500 into AppError upstream without leaking secrets', async () => {
    provider.respondWith(500, JSON.stringify({ error: 'boom', echo: { to: PHONE, key: API_KEY } }));
    const err = await catchError(sendSms(smsRequest(), allowProvider()));
    expectProviderError(err);
    expect(provider.requests).toHaveLength(1);
  });

  it.each([400, 401, 404, 503])('treats HTTP %i as a provider error, the status in its cause', async (status) => {
    provider.respondWith(status);
    const err = await catchError(sendSms(smsRequest(), allowProvider()));
    expectProviderError(err);
    expect(err.cause).toMatchObject({ status, message: `provider answered HTTP ${status}` });
  });

  it('does not follow a 302 redirect', async () => {
    provider.redirect('/elsewhere');
    expectProviderError(await catchError(sendSms(smsRequest(), allowProvider())));
    expect(provider.requests.map((r) => r.path)).toEqual(['/api/v1/sms/send']);
  });

  it('refuses 127.0.0.1 without an allow-list entry, before connecting', async () => {
    const err = await catchError(sendSms(smsRequest(), { allowHosts: [] }));
    expectProviderError(err);
    expect(err.cause).toBeInstanceOf(SmsSendFailure);
    expect((err.cause as SmsSendFailure).message).toMatch(/^refused: /);
    expect(provider.requests).toHaveLength(0);
    expect(provider.connections()).toBe(0);
  });

  it('works through localhost:port when allow-listed (resolved once, pinned)', async () => {
    const calls: string[] = [];
    const spy: Resolver = async (host) => {
      calls.push(host);
      return defaultResolver(host);
    };
    await sendSms(
      smsRequest({ baseUrl: `https://localhost:${provider.port}` }),
      { allowHosts: [`localhost:${provider.port}`] },
      spy,
    );
    expect(calls).toEqual(['localhost']);
    expect(provider.requests).toHaveLength(1);
    expect(provider.requests[0]?.headers.host).toBe(`localhost:${provider.port}`);
  });

  it('gives up after the timeout', async () => {
    provider.delay(5_000);
    const started = Date.now();
    expectProviderError(await catchError(sendSms(smsRequest(), allowProvider(), undefined, 300)));
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('refuses a send_path without a leading slash, sending nothing', async () => {
    expectProviderError(await catchError(sendSms(smsRequest({ sendPath: 'v1/send' }), allowProvider())));
    expect(provider.requests).toHaveLength(0);
  });
});

describe('buildSmsTargetUrl', () => {
  it('joins base_url without its trailing slash and send_path', () => {
    expect(buildSmsTargetUrl('https://sms.example/api/', '/send')).toEqual({ ok: true, url: 'https://sms.example/api/send' });
    expect(buildSmsTargetUrl('https://sms.example', '/send')).toEqual({ ok: true, url: 'https://sms.example/send' });
  });

  it('refuses a relative send_path, one that would change the host, and a bad base_url', () => {
    expect(buildSmsTargetUrl('https://sms.example', 'send').ok).toBe(false);
    expect(buildSmsTargetUrl('https://sms.example', '@evil.example/send').ok).toBe(false);
    expect(buildSmsTargetUrl('https:/', '/evil.example/x').ok).toBe(false);
    expect(buildSmsTargetUrl('not a url', '/send').ok).toBe(false);
    // `//evil` stays a path on the same host.
    const same = buildSmsTargetUrl('https://sms.example', '//evil.example/x');
    expect(same.ok && new URL(same.url).host).toBe('sms.example');
  });
});

describe('postJsonPinned', () => {
  const post = (url: string, resolve: Resolver, allowHosts: string[] = [], timeoutMs = 2_000) =>
    postJsonPinned(url, { headers: {}, body: { a: 1 }, timeoutMs, policy: { allowHosts }, resolve });

  it('rejects with a timeout error when the server is too slow', async () => {
    provider.delay(5_000);
    const started = Date.now();
    const err = await catchError(post(`${provider.origin}/slow`, defaultResolver, [provider.hostPort], 250));
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(OutboundRefused);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(provider.requests).toHaveLength(1);
  });

  it('caps the response body at 64 KiB', async () => {
    provider.respondWith(200, 'x'.repeat(200_000));
    const res = await post(`${provider.origin}/big`, defaultResolver, [provider.hostPort]);
    expect(res.status).toBe(200);
    expect(res.body.length).toBe(MAX_RESPONSE_BYTES);
  });

  it('returns a 3xx as a status instead of following it', async () => {
    provider.redirect(`${provider.origin}/elsewhere`, 307);
    const res = await post(`${provider.origin}/first`, defaultResolver, [provider.hostPort]);
    expect(res.status).toBe(307);
    expect(provider.requests.map((r) => r.path)).toEqual(['/first']);
  });

  it.each([[['10.0.0.5']], [['8.8.8.8', '127.0.0.1']], [['::ffff:127.0.0.1']]])(
    'refuses a name resolving to %j at connect time, without connecting',
    async (addresses) => {
      const resolve = scriptedResolver(addresses);
      const err = await catchError(post(`https://sms.test:${provider.port}/send`, resolve));
      expect(err).toBeInstanceOf(OutboundRefused);
      expect((err as Error).message).toBe('host resolves to a private or reserved address');
      expect(resolve.calls).toEqual(['sms.test']);
      expect(provider.connections()).toBe(0);
    },
  );

  it('closes the DNS-rebinding window: a name checked public at configuration is refused when it rebinds', async () => {
    const resolve = scriptedResolver(['93.184.216.34'], ['127.0.0.1']);
    const url = `https://rebind.test:${provider.port}/send`;
    expect((await checkPublicHttpsUrl(url, { allowHosts: [] }, resolve)).ok).toBe(true);
    expect(await catchError(post(url, resolve))).toBeInstanceOf(OutboundRefused);
    expect(resolve.calls).toEqual(['rebind.test', 'rebind.test']);
    expect(provider.connections()).toBe(0);
  });

  it('pins to the resolved address and verifies TLS against the name, not the IP', async () => {
    // sms.test has no DNS here: reaching the server proves the pinned lookup was
    // used; the certificate (localhost, 127.0.0.1, ::1) does not name sms.test,
    // so verification must fail even though the IP it pinned is in the SAN.
    const resolve = scriptedResolver(['127.0.0.1']);
    const err = await catchError(post(`https://sms.test:${provider.port}/send`, resolve, [`sms.test:${provider.port}`]));
    expect((err as NodeJS.ErrnoException).code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(resolve.calls).toEqual(['sms.test']);
    expect(provider.connections()).toBe(1);
    expect(provider.requests).toHaveLength(0);
  });

  it('refuses a URL the policy refuses outright', async () => {
    const resolve = scriptedResolver(['93.184.216.34']);
    for (const url of [`http://127.0.0.1:${provider.port}/`, 'https://u:p@sms.test/', 'https://localhost/x']) {
      expect(await catchError(post(url, resolve))).toBeInstanceOf(OutboundRefused);
    }
    expect(resolve.calls).toEqual([]);
  });
});

describe('TLS trust comes from the test CA in NODE_EXTRA_CA_CERTS', () => {
  it('is configured by vitest.config.ts', () => {
    expect(testCaTrustProblem()).toBeNull();
  });

  it('verifies the fake provider with default trust, and not with the bundled roots alone', async () => {
    expect(await probeTlsHandshake(provider.port)).toBe('ok');
    expect(await probeTlsHandshake(provider.port, true)).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED/);
  });
});
