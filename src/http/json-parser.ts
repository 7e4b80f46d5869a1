import sjson from 'secure-json-parse';
import type { FastifyInstance } from 'fastify';

/**
 * JSON bodies: an empty body is no body (so `POST /auth/logout` with a JSON
 * content type and nothing in it is fine); anything unparseable is a 400.
 * secure-json-parse refuses `__proto__` and `constructor.prototype` keys, with
 * their own message. JSON is the only body type: any other (`text/plain`
 * included) is 415.
 */
export function registerJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    if (nestingDepth(text) > MAX_DEPTH) {
      done(Object.assign(new Error(`JSON body nested too deeply: at most ${MAX_DEPTH} levels`), { statusCode: 400, code: 'MAILSVC_JSON_TOO_DEEP' }), undefined);
      return;
    }
    let value: unknown;
    try {
      value = sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
    } catch (err) {
      done(/prototype property/.test((err as Error).message) ? forbiddenKey() : malformed(), undefined);
      return;
    }
    // A lone surrogate (`"\ud800"`) is valid JSON but no text: it would be stored as U+FFFD or break a driver.
    if (/\\u[dD][89a-fA-F]/.test(text) && hasLoneSurrogate(value)) {
      done(Object.assign(new Error('Invalid string in the body: a lone UTF-16 surrogate (\\ud800-\\udfff) is not text'), { statusCode: 400, code: 'MAILSVC_LONE_SURROGATE' }), undefined);
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

function forbiddenKey(): Error {
  return Object.assign(new Error('Forbidden key in the JSON body: "__proto__" and "constructor.prototype" are not accepted'), { statusCode: 400, code: 'MAILSVC_JSON_FORBIDDEN_KEY' });
}

function malformed(): Error {
  return Object.assign(new Error('Malformed JSON body'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' });
}

/** No body of this API nests deeper than a few levels; 64 leaves room and keeps every walk shallow. */
export const MAX_DEPTH = 64;

/**
 * The deepest nesting of `[` and `{` in JSON text, brackets inside strings
 * not counted; one pass, no recursion. Malformed text gives some number and
 * is then refused by the parser.
 */
export function nestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** Whether any string or key holds U+0000. */
function hasNul(root: unknown): boolean {
  return someString(root, (s) => s.includes('\u0000'));
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether any string or key holds a surrogate that is not half of a pair. */
function hasLoneSurrogate(root: unknown): boolean {
  return someString(root, (s) => LONE_SURROGATE.test(s));
}

/** Whether any string or key passes the test; iterative, so no depth can overflow the stack. */
function someString(root: unknown, test: (s: string) => boolean): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') {
      if (test(value)) return true;
    } else if (Array.isArray(value)) {
      for (const item of value as unknown[]) stack.push(item);
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        if (test(k)) return true;
        stack.push(v);
      }
    }
  }
  return false;
}
