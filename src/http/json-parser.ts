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
    try {
      done(null, sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));
    } catch {
      const err = Object.assign(new Error('Malformed JSON body'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' });
      done(err, undefined);
    }
  });
}
