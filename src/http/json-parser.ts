import sjson from 'secure-json-parse';
import type { FastifyInstance } from 'fastify';

/**
 * JSON bodies: an empty body is no body (so `POST /auth/logout` with a JSON
 * content type and nothing in it is fine); anything unparseable is a 400.
 * secure-json-parse refuses `__proto__` and `constructor.prototype` keys.
 */
export function registerJsonParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    let value: unknown;
    try {
      value = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
    } catch {
      done(malformed(), undefined);
      return;
    }
    // PostgreSQL cannot store U+0000 in text, and no field of this API needs it.
    if ((text.includes('\\u0000') || text.includes('\u0000')) && hasNul(value)) {
      done(Object.assign(new Error('NUL characters are not allowed in the body'), { statusCode: 400, code: 'MAILSVC_NUL_IN_BODY' }), undefined);
      return;
    }
    done(null, value);
  });
}

function malformed(): Error {
  return Object.assign(new Error('Malformed JSON body'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' });
}

function hasNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (Array.isArray(value)) return value.some(hasNul);
  if (value !== null && typeof value === 'object') return Object.entries(value).some(([k, v]) => k.includes('\u0000') || hasNul(v));
  return false;
}
