/**
 * fast-check arbitraries for fuzzing the eleven /auth endpoints: random JSON
 * bodies (of the endpoint's own field names and of any shape), malformed and
 * oversized bodies, random content types, Authorization and X-Forwarded-For
 * headers and query strings.
 *
 * Two placeholders stand for values only known at run time and are replaced
 * by the test just before the request is sent: REAL_CHALLENGE (the id of a
 * live sign-in challenge) and REAL_TOKEN_ID (the id part of a genuine access
 * token, to forge `<real id>.<wrong secret>` tokens).
 */
import fc from 'fast-check';
import { ADMIN_PASSWORD, ADMIN_USER } from '../helpers/app.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export const REAL_CHALLENGE = 'ZZREALCHALLENGEZZ';
export const REAL_TOKEN_ID = 'ZZREALTOKENIDZZ';

export type Endpoint = {
  method: HttpMethod;
  path: string;
  /** Needs the administrator (every /auth endpoint but login, SMS send, verify and logout). */
  admin: boolean;
  /** The endpoint's real body fields, each with plausible values. */
  fields: Record<string, fc.Arbitrary<unknown>>;
  /** The fields its schema requires. */
  required: readonly string[];
};

export type FuzzRequest = {
  method: HttpMethod;
  url: string;
  headers: Record<string, string>;
  payload: string | Buffer | undefined;
  remoteAddress: string | undefined;
};

const MiB = 1024 * 1024;

// ---------------------------------------------------------------- values

/** Lengths around every maxLength of the request schemas. */
const boundaryLength = fc.constantFrom(31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097);

/** One character repeated up to a few thousand times (1 to 4 UTF-8 bytes each, a NUL, a space). */
const longText = fc
  .tuple(fc.oneof(boundaryLength, fc.integer({ min: 1, max: 6000 })), fc.constantFrom('a', 'é', '€', '𝄞', ' ', '\u0000', '0', '/'))
  .map(([n, c]) => c.repeat(n));

/** Characters that break parsers, drivers, logs and shells more often than others. */
const NASTY = ['\u0000', '\u0001', '\u001f', '\u007f', '\n', '\r', '\t', '"', '\\', "'", '`', '%', '%00', '\u2028', '\u2029', '\ufeff', '\ufffd', '\ud800', '\udfff', '𝄞', 'é', 'e\u0301', 'İ', 'ß', ';', '--', '$', '{}', '<', '>', '&', ' ', '.', ':', '/', '*', '?', '#'];
export const nastyText: fc.Arbitrary<string> = fc
  .array(fc.oneof(fc.constantFrom(...NASTY), fc.string({ minLength: 1, maxLength: 4 })), { minLength: 1, maxLength: 8 })
  .map((parts) => parts.join(''));

/** Any text: ASCII, any code point (lone surrogates included), graphemes, control characters, long runs. */
export const anyText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: nastyText },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: longText },
);

/** Any JSON value, for a field of the wrong type. */
export const anyJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 });

const NEAR_MISS_PASSWORDS = [
  `${ADMIN_PASSWORD} `,
  ` ${ADMIN_PASSWORD}`,
  ADMIN_PASSWORD.toUpperCase(),
  ADMIN_PASSWORD.slice(0, -1),
  `${ADMIN_PASSWORD}\u0000`,
  ADMIN_PASSWORD.replace(/ /g, ''),
  ADMIN_PASSWORD.replace(' ', '\u00a0'),
  '',
];

/** Never the administrator password, but often close to it. */
export const wrongPassword: fc.Arbitrary<string> = fc
  .oneof({ weight: 3, arbitrary: anyText }, { weight: 1, arbitrary: fc.constantFrom(...NEAR_MISS_PASSWORDS) })
  .filter((p) => p !== ADMIN_PASSWORD);

export const username: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(ADMIN_USER) },
  { weight: 1, arbitrary: fc.constantFrom('Admin', 'ADMIN', 'admin ', ' admin', 'admin\u0000', 'root', '', 'admin:x', '-') },
  { weight: 2, arbitrary: anyText },
);

const base64url = fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.split('')), minLength: 1, maxLength: 48 });

/** Strings shaped like access tokens `<id>.<secret>`, or not quite. */
export const tokenLike: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(base64url, base64url).map(([a, b]) => `${a}.${b}`),
  fc.tuple(nastyText, nastyText).map(([a, b]) => `${a}.${b}`),
  base64url.map((s) => `${REAL_TOKEN_ID}.${s}`),
  fc.constantFrom('a.b', '.', 'a.', '.b', '..', REAL_TOKEN_ID, `${REAL_TOKEN_ID}.`, `${REAL_TOKEN_ID}..`, 'null', 'undefined'),
  fc.integer({ min: 150, max: 600 }).map((n) => `${'a'.repeat(n)}.${'b'.repeat(n)}`),
  anyText,
);

export const challengeId: fc.Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(REAL_CHALLENGE) },
  { weight: 1, arbitrary: fc.constantFrom('', `${REAL_CHALLENGE} `, `${REAL_CHALLENGE}x`) },
  { weight: 2, arbitrary: base64url },
  { weight: 2, arbitrary: anyText },
);

export const sixDigits: fc.Arbitrary<string> = fc.stringMatching(/^\d{6}$/);

export const otpCode: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: sixDigits },
  { weight: 1, arbitrary: fc.stringMatching(/^\d{1,12}$/) },
  { weight: 1, arbitrary: fc.constantFrom('', '000000', ' 123456', '123456 ', '１２３４５６', '12345e', '-12345', '0x1234') },
  { weight: 2, arbitrary: anyText },
);

const VALID_PHONES = ['+14155552671', '+442071838750', '+4915123456789', '+33612345678', '+81312345678'];

export const phone: fc.Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(...VALID_PHONES) },
  { weight: 1, arbitrary: fc.constantFrom('', '+1', '+999999999999999', '4155552671', '+1 (415) 555-2671', '+49 151 23456789 ext. 5', 'tel:+14155552671', '+٤١٥٥٥٥٢٦٧١') },
  { weight: 1, arbitrary: fc.stringMatching(/^\+?\d{1,20}$/) },
  { weight: 2, arbitrary: anyText },
);

/** Put into MAILSVC_OUTBOUND_ALLOW_HOSTS by the tests: a name accepted without a lookup. */
export const ALLOWED_HOST = 'sms-gateway.invalid:8443';

const PROVIDER_CODES = ['provider_a', 'provider_b'];
const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', 'PROVIDER_A', 'provider_c', 'provider_a ', ''];

export const providerCode: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...PROVIDER_CODES) },
  { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_KEYS) },
  { weight: 1, arbitrary: anyText },
);

/**
 * base_url values: public IP literals (no DNS needed), private and reserved
 * targets in many spellings, wrong schemes, credentials, junk, and names
 * (the tests answer every DNS lookup with ENOTFOUND, so no network is used).
 */
export const baseUrl: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'https://8.8.8.8',
      'https://1.1.1.1:8443/base/',
      'https://[2001:4860:4860::8888]',
      'https://9.9.9.9///',
      'http://8.8.8.8',
      'https://127.0.0.1',
      'https://localhost',
      'https://api.localhost',
      'https://10.0.0.1',
      'https://100.64.0.1',
      'https://169.254.169.254',
      'https://0x7f000001',
      'https://2130706433',
      'https://017700000001',
      'https://127.1',
      'https://0',
      'https://[::1]',
      'https://[::]',
      'https://[::ffff:127.0.0.1]',
      'https://[::ffff:7f00:1]',
      'https://[64:ff9b::a00:1]',
      'https://[fc00::1]',
      'https://[fe80::1%25eth0]',
      'https://user:pass@8.8.8.8',
      'https://8.8.8.8/?q=1',
      'https://8.8.8.8/#frag',
      'ftp://8.8.8.8',
      'javascript:alert(1)',
      'file:///etc/passwd',
      '',
      'https://',
      'https://[',
      'https://a b.invalid',
      '//8.8.8.8',
      'HTTPS://8.8.8.8',
    ),
  },
  { weight: 1, arbitrary: fc.oneof(fc.constantFrom(`https://${ALLOWED_HOST}`, `https://${ALLOWED_HOST}/v2/`), fc.domain().map((d) => `https://${d}`)) },
  { weight: 1, arbitrary: fc.ipV4().map((ip) => `https://${ip}`) },
  { weight: 1, arbitrary: fc.ipV6().map((ip) => `https://[${ip}]`) },
  { weight: 1, arbitrary: anyText },
);

/** base_url values the service accepts without a DNS answer. */
export const publicBaseUrl: fc.Arbitrary<string> = fc.constantFrom('https://8.8.8.8', 'https://1.1.1.1:8443/base/', 'https://[2001:4860:4860::8888]', `https://${ALLOWED_HOST}`, 'https://9.9.9.9///');

export const sendPath: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('/send', '/', '/api/v1/modules/sms/send', '//evil.example/x', 'send', '/../../x', '/@evil.example', '/%2e%2e/', '/?x=1'),
  anyText,
);

// ---------------------------------------------------------------- endpoints

const none: Record<string, fc.Arbitrary<unknown>> = {};

export const ENDPOINTS: readonly Endpoint[] = [
  { method: 'POST', path: '/auth/login', admin: false, fields: { username, password: wrongPassword }, required: ['username', 'password'] },
  { method: 'POST', path: '/auth/mfa/sms', admin: false, fields: { challenge_id: challengeId }, required: ['challenge_id'] },
  {
    method: 'POST',
    path: '/auth/mfa/verify',
    admin: false,
    fields: {
      challenge_id: challengeId,
      method: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('totp', 'sms') }, { weight: 1, arbitrary: fc.constantFrom('TOTP', 'password', '') }, { weight: 1, arbitrary: anyText }),
      code: otpCode,
    },
    required: ['challenge_id', 'method', 'code'],
  },
  { method: 'POST', path: '/auth/logout', admin: false, fields: { access_token: tokenLike }, required: [] },
  { method: 'GET', path: '/auth/mfa', admin: true, fields: none, required: [] },
  { method: 'POST', path: '/auth/mfa/totp/enroll', admin: true, fields: none, required: [] },
  { method: 'POST', path: '/auth/mfa/totp/confirm', admin: true, fields: { code: otpCode }, required: ['code'] },
  { method: 'DELETE', path: '/auth/mfa/totp', admin: true, fields: none, required: [] },
  { method: 'PATCH', path: '/auth/mfa/sms', admin: true, fields: { phone, provider: providerCode, enabled: fc.boolean() }, required: [] },
  { method: 'GET', path: '/auth/mfa/providers', admin: true, fields: none, required: [] },
  {
    method: 'PUT',
    path: '/auth/mfa/providers',
    admin: true,
    fields: {
      code: providerCode,
      enabled: fc.boolean(),
      base_url: baseUrl,
      client_id: anyText,
      send_path: sendPath,
      from_sender: anyText,
      route: fc.oneof(fc.constant('internal'), anyText),
      clear_secrets: fc.boolean(),
      client_secret: anyText,
      api_key: anyText,
    },
    required: ['code'],
  },
];

export function endpoint(method: HttpMethod, path: string): Endpoint {
  const ep = ENDPOINTS.find((e) => e.method === method && e.path === path);
  if (!ep) throw new Error(`no endpoint ${method} ${path}`);
  return ep;
}

// ---------------------------------------------------------------- bodies

/**
 * An object mixing the endpoint's field names (mostly with plausible values,
 * sometimes with a value of any type) with a few random extra keys.
 */
export function fieldObject(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> {
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, arb] of Object.entries(fields)) model[name] = fc.oneof({ weight: 5, arbitrary: arb }, { weight: 1, arbitrary: anyJson });
  const extras = fc.oneof(
    { weight: 4, arbitrary: fc.constant({}) },
    { weight: 1, arbitrary: fc.dictionary(fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('admin', 'is_admin', 'id', 'role')), anyJson, { maxKeys: 3 }) },
  );
  return fc.tuple(extras, fc.record(model, { requiredKeys: [] })).map(([extra, known]) => ({ ...extra, ...known }));
}

/**
 * An object of the schema's shape: the required fields always, the optional
 * ones now and then, plausible values of the right type (which the service
 * may still refuse), sometimes a few unknown keys (which are dropped).
 */
export function shapedObject(fields: Record<string, fc.Arbitrary<unknown>>, required: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  const extras = fc.oneof({ weight: 5, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 12 }), anyJson, { maxKeys: 2 }) });
  return fc.tuple(extras, fc.record(fields, { requiredKeys: required.filter((k) => k in fields) })).map(([extra, known]) => ({ ...extra, ...known }));
}

/** Keys that secure-json-parse must refuse, spelled plainly and escaped, placed at the top or nested. */
function protoText(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<string> {
  const key = fc.constantFrom('"__proto__"', '"\\u005f_proto__"', '"__pro\\u0074o__"');
  const payload = fc.constantFrom('{"is_admin":true}', '{"polluted":1}', 'null', '[]', '{"toString":"x"}');
  return fc
    .tuple(fieldObject(fields), key, payload, fc.constantFrom('top', 'nested', 'constructor', 'constructor-nested'))
    .map(([obj, k, p, where]) => {
      const base = JSON.stringify(obj).slice(1, -1);
      const sep = base === '' ? '' : ',';
      const first = Object.keys(obj)[0] ?? 'x';
      switch (where) {
        case 'top':
          return `{${base}${sep}${k}:${p}}`;
        case 'nested':
          return `{${base}${sep}${JSON.stringify(first)}:{${k}:${p}}}`;
        case 'constructor':
          return `{${base}${sep}"constructor":{"prototype":${p}}}`;
        default:
          return `{${base}${sep}${JSON.stringify(first)}:[{"constructor":{"prototype":${p}}}]}`;
      }
    });
}

/** Text that is not JSON, or not quite. */
function malformedText(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<string> {
  const valid = fieldObject(fields).map((o) => JSON.stringify(o));
  return fc.oneof(
    fc.string({ maxLength: 60 }),
    fc.string({ unit: 'binary', maxLength: 60 }),
    fc.tuple(valid, fc.nat()).map(([t, n]) => t.slice(0, t.length > 1 ? n % (t.length - 1) : 0)),
    fc.tuple(valid, fc.string({ minLength: 1, maxLength: 5 })).map(([t, junk]) => `${t}${junk}`),
    valid.map((t) => t.replace(/"/g, "'")),
    valid.map((t) => t.replace(/}$/, ',}')),
    fc.constantFrom('{', '}', '[', '{"a":}', '{"username":"a" "password":"b"}', 'NaN', 'undefined', '{"a":1}{"b":2}', '{"username":"\\ud800","password":"\\udfff"}', "{'a':1}", '\u0000', '{"a":"\\x41"}', '{"a":01}'),
  );
}

/**
 * A JSON string field of about 1 to 2 MiB, so that both sides of the 1 MiB
 * body limit are reached.
 */
function hugeText(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<string> {
  const names = Object.keys(fields);
  const name = names.length > 0 ? fc.constantFrom(...names) : fc.constant('x');
  const size = fc.oneof(fc.integer({ min: MiB - 64, max: MiB + 64 }), fc.integer({ min: MiB - 4096, max: 2 * MiB }));
  return fc.tuple(name, size, fc.constantFrom('a', '€', '\\u0000', ' ')).map(([n, bytes, c]) => {
    const unit = c === '€' ? 3 : c.length;
    return `{${JSON.stringify(n)}:"${c.repeat(Math.max(0, Math.floor((bytes - n.length - 6) / unit)))}"}`;
  });
}

/** Every kind of body. `undefined` sends no body at all. */
export function bodyFor(ep: Endpoint): fc.Arbitrary<string | Buffer | undefined> {
  return fc.oneof(
    { weight: 12, arbitrary: shapedObject(ep.fields, ep.required).map((o) => JSON.stringify(o)) },
    { weight: 6, arbitrary: fieldObject(ep.fields).map((o) => JSON.stringify(o)) },
    { weight: 3, arbitrary: anyJson.map((v) => JSON.stringify(v)) },
    { weight: 2, arbitrary: protoText(ep.fields) },
    { weight: 3, arbitrary: malformedText(ep.fields) },
    { weight: 2, arbitrary: fc.constantFrom(undefined, '', ' ', '\n\t', '\ufeff', 'null', '{}', '[]', '""', '0') },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)) },
    { weight: 1, arbitrary: fieldObject(ep.fields).map((o) => Buffer.from(JSON.stringify(o), 'utf16le')) },
    { weight: 1, arbitrary: hugeText(ep.fields) },
  );
}

// ---------------------------------------------------------------- headers

/** What an HTTP parser lets through in a header value: visible ASCII, space, tab, obs-text. */
export const headerText: fc.Arbitrary<string> = fc.string({
  unit: fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) }, { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xff }) }, { weight: 1, arbitrary: fc.constant(0x09) }).map((c) => String.fromCharCode(c)),
  maxLength: 60,
});

export const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 20, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      'Application/Json; Charset=UTF-8',
      'application/json; charset=iso-8859-1',
      'application/json; charset=utf-16le',
      'application/json;',
      'application/json ; foo=bar',
      'application/json; charset="utf-8"; boundary=x',
      'application/vnd.api+json',
      'application/json-patch+json',
      'text/json',
    ),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'text/plain',
      'text/plain; charset=utf-8',
      'text/plain; charset=bogus',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=----fuzz',
      'multipart/form-data',
      'application/octet-stream',
      'application/xml',
      '*/*',
      '',
      ';',
      'application/',
      '/json',
      'json',
    ),
  },
  { weight: 1, arbitrary: headerText },
  { weight: 2, arbitrary: fc.constant(undefined) },
);

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

/** Authorization values that never carry the right credentials. */
export const badAuthorization: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.tuple(anyText, anyText).map(([u, p]) => `Basic ${b64(`${u}:${p}`)}`) },
  { weight: 3, arbitrary: wrongPassword.map((p) => `Basic ${b64(`${ADMIN_USER}:${p}`)}`) },
  { weight: 1, arbitrary: anyText.map((s) => `Basic ${b64(s)}`) },
  { weight: 1, arbitrary: headerText.map((s) => `Basic ${s}`) },
  { weight: 3, arbitrary: tokenLike.map((t) => `Bearer ${t}`) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      'Basic',
      'Basic ',
      'Basic =',
      'Basic ====',
      `Basic ${b64(ADMIN_USER)}`,
      `Basic ${b64(`${ADMIN_USER}:`)}`,
      `Basic ${b64(`:${ADMIN_PASSWORD}`)}`,
      `Basic ${b64(`${ADMIN_PASSWORD}:${ADMIN_USER}`)}`,
      `Basic  ${b64(`${ADMIN_USER}:wrong`)}`,
      'Bearer',
      'Bearer ',
      'Bearer a.b',
      'bearer a.b',
      'BEARER a.b',
      'Bearer  a.b ',
      'Bearer a.b c.d',
      'Bearer\ta.b',
      'Digest username="admin", realm="mailsvc"',
      'Negotiate YII=',
      'Token abc',
      'NTLM TlRMTVNTUAABAAAA',
      ' Basic YQ==',
      'Basic\tYWRtaW46eA==',
    ),
  },
  { weight: 1, arbitrary: headerText },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 8000 }).map((n) => `Bearer ${'A'.repeat(n)}`) },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 6000 }).map((n) => `Basic ${b64(`${ADMIN_USER}:${'x'.repeat(n)}`)}`) },
);

export const forwardedFor: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.ipV4() },
  { weight: 1, arbitrary: fc.ipV6() },
  { weight: 1, arbitrary: fc.array(fc.oneof(fc.ipV4(), fc.ipV6(), headerText), { minLength: 1, maxLength: 5 }).map((a) => a.join(', ')) },
  { weight: 1, arbitrary: fc.constantFrom('', ',', ' , , ', 'unknown', '127.0.0.1', '::1', '1.2.3.4 from 6.6.6.6', '999.999.999.999', '[::1]:80', 'for=1.2.3.4', '1.2.3.4:5678') },
  { weight: 1, arbitrary: headerText },
  { weight: 1, arbitrary: fc.integer({ min: 200, max: 900 }).map((n) => '1.2.3.4, '.repeat(n)) },
);

/** Lone surrogates replaced, so that encodeURIComponent accepts the text. */
const wellFormed = (s: string): string => s.replace(/\p{Cs}/gu, '\ufffd');

/** A query string (with its `?`) or nothing. */
export const queryString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.tuple(fc.oneof(anyText, fc.constantFrom('username', 'password', 'code', '__proto__', 'constructor[prototype]', 'a[b]', 'access_token')), anyText), { maxLength: 4 })
      .map((pairs) => `?${pairs.map(([k, v]) => `${encodeURIComponent(wellFormed(k))}=${encodeURIComponent(wellFormed(v))}`).join('&')}`),
  },
  { weight: 1, arbitrary: fc.constantFrom('?', '??', '?&&&', '?%', '?%zz=%', '?%E0%A4%A=1', '?a=1&a=2&a=3', '?username=admin&password=x', '?__proto__[x]=1', `?${'a=1&'.repeat(2000)}`) },
  {
    weight: 1,
    arbitrary: fc
      .string({ unit: fc.integer({ min: 0x21, max: 0x7e }).filter((c) => c !== 0x23).map((c) => String.fromCharCode(c)), maxLength: 60 })
      .map((s) => `?${s}`),
  },
);

export const remoteAddress: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.ipV4() },
  { weight: 1, arbitrary: fc.ipV6() },
);

/** A few more headers a client may send. */
const extraHeaders: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({}) },
  {
    weight: 1,
    arbitrary: fc.record(
      {
        accept: fc.oneof(fc.constantFrom('application/json', 'text/html', '*/*', ''), headerText),
        'x-http-method-override': fc.constantFrom('GET', 'DELETE', 'PUT'),
        'content-encoding': fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'x'),
        'x-real-ip': fc.oneof(fc.ipV4(), headerText),
        cookie: headerText,
        'x-request-id': headerText,
      },
      { requiredKeys: [] },
    ),
  },
);

/**
 * What the server sees of a header value a client sent: UTF-8 bytes read as
 * latin1, without the control characters Node's HTTP parser refuses (light-my-request
 * does not check, so a value with NUL or CR LF would test an impossible request).
 */
export function asHeaderValue(v: string): string {
  const latin1 = Buffer.from(v, 'utf8').toString('latin1');
  return [...latin1].filter((c) => c === '\t' || (c >= ' ' && c !== '\x7f')).join('');
}

/**
 * A whole request to `ep` from an unauthenticated client. Placeholders are
 * still in; the test replaces them.
 */
export function unauthenticatedRequest(ep: Endpoint): fc.Arbitrary<FuzzRequest> {
  return fc
    .record({
      body: bodyFor(ep),
      type: contentType,
      authorization: badAuthorization,
      xff: forwardedFor,
      query: queryString,
      remote: remoteAddress,
      extra: extraHeaders,
    })
    .map(({ body, type, authorization, xff, query, remote, extra }) => {
      const headers: Record<string, string> = { ...extra };
      if (type !== undefined) headers['content-type'] = type;
      if (authorization !== undefined) headers.authorization = authorization;
      if (xff !== undefined) headers['x-forwarded-for'] = xff;
      for (const [k, v] of Object.entries(headers)) headers[k] = asHeaderValue(v);
      return { method: ep.method, url: `${ep.path}${query}`, headers, payload: body, remoteAddress: remote };
    });
}
