import { hasControlChars } from '../shared/mail-names.js';
import { isRecord } from '../shared/json-value.js';
import type { ExecErrorKind } from '../adapters/exec.js';
import type { HelperResult } from '../adapters/helper-client.js';

/**
 * The helper's line protocol: one JSON object per line each way, UTF-8, `\n`-terminated.
 *   request: {"id": "7", "action": "doveadm-kick", "args": ["alice@example.org"]}
 *   answer:  {"id": "7", "ok": true, "code": 0, "stdout": "…", "stderr": "…"}
 *        or  {"id": "7", "ok": false, "error": "invalid-argument", "detail": "…", "exec": {"kind": "exit", "code": 75}}
 * Answers come in request order. `id` is echoed (null when the line could not be read).
 */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** An answer carries up to 1 MiB of stdout and of stderr, JSON-escaped. */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
const MAX_ARGS = 16;
/** The longest argument by default; an action may take longer ones (ActionSpec.maxArgLength), within the line limit. */
export const MAX_ARG_LENGTH = 4096;

export type RequestId = string | number;
export type HelperRequest = { id: RequestId; action: string; args: string[] };

export type AnswerError = 'malformed' | 'line-too-long' | 'busy' | 'unknown-action' | 'invalid-argument' | 'failed' | 'unavailable';

export type HelperAnswer =
  | ({ id: RequestId | null; ok: true } & HelperResult)
  | { id: RequestId | null; ok: false; error: AnswerError; detail: string; exec?: { kind: ExecErrorKind; code?: number | undefined } };

/** Reads one request line; anything unexpected is a `malformed` answer, never an exception. */
export function parseRequest(line: string, maxArgLength: (action: string) => number = () => MAX_ARG_LENGTH): HelperRequest | HelperAnswer {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { id: null, ok: false, error: 'malformed', detail: 'a request is one JSON object per line' };
  }
  const id = isRecord(value) ? value.id : undefined;
  const goodId = (typeof id === 'string' && id.length <= 64) || (typeof id === 'number' && Number.isSafeInteger(id));
  const answerId = goodId ? (id as RequestId) : null;
  const bad = (detail: string): HelperAnswer => ({ id: answerId, ok: false, error: 'malformed', detail });
  if (!isRecord(value) || !goodId) return bad('a request needs "id" (a string of at most 64 characters or an integer)');
  const { action, args } = value;
  if (typeof action !== 'string' || action.length > 64) return bad('"action" must be a string');
  if (!Array.isArray(args) || args.length > MAX_ARGS || !args.every((a): a is string => typeof a === 'string')) {
    return bad(`"args" must be an array of at most ${MAX_ARGS} strings`);
  }
  const limit = maxArgLength(action);
  if (args.some((a) => a.length > limit || hasControlChars(a))) {
    return bad(`an argument holds a control character or is longer than ${limit} characters`);
  }
  return { id: answerId as RequestId, action, args };
}

export const isAnswer = (r: HelperRequest | HelperAnswer): r is HelperAnswer => 'ok' in r;

export const formatLine = (message: HelperRequest | HelperAnswer): string => `${JSON.stringify(message)}\n`;

/** Reads an answer line on the client side; null when it is not one. */
export function parseAnswer(line: string): HelperAnswer | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (!isRecord(value) || typeof value.ok !== 'boolean') return null;
  if (value.ok) {
    const { code, stdout, stderr } = value;
    if (typeof code !== 'number' || typeof stdout !== 'string' || typeof stderr !== 'string') return null;
    return { id: (value.id ?? null) as RequestId | null, ok: true, code, stdout, stderr };
  }
  if (typeof value.error !== 'string' || typeof value.detail !== 'string') return null;
  return value as HelperAnswer;
}
