/**
 * HTTP SMS provider adapter: `POST {base_url}{send_path}` with the provider's
 * credentials in `X-Client-Id`, `X-Client-Secret`, `X-Api-Key` and the JSON
 * body `{"to", "message", "from", "route"}` (docs/contract.md, Calling an SMS provider).
 *
 * Every failure becomes AppError('upstream', 'SMS provider error'). Nothing
 * here logs, and no error (message, stack or cause) carries the credentials,
 * the phone number, the message or the provider's answer.
 */
import { AppError } from '../../shared/errors.js';
import type { OutboundPolicy, Resolver } from '../outbound/address-policy.js';
import { OutboundRefused, postJsonPinned } from '../outbound/pinned-request.js';

export type SmsSendRequest = {
  baseUrl: string;
  sendPath: string;
  clientId: string | null;
  clientSecret: string | null;
  apiKey: string | null;
  to: string;
  message: string;
  from: string | null;
  route: string;
};

export const SMS_TIMEOUT_MS = 10_000;
export const SMS_PROVIDER_ERROR = 'SMS provider error';

/**
 * Joins base_url (trailing slashes dropped) and send_path. Refuses a send_path
 * that does not start with `/` or a join that would change the host.
 */
export function buildSmsTargetUrl(baseUrl: string, sendPath: string): { ok: true; url: string } | { ok: false; reason: string } {
  if (!sendPath.startsWith('/')) return { ok: false, reason: 'send path must start with /' };
  let base: URL;
  let target: URL;
  const joined = `${baseUrl.replace(/\/+$/, '')}${sendPath}`;
  try {
    base = new URL(baseUrl);
    target = new URL(joined);
  } catch {
    return { ok: false, reason: 'not a valid URL' };
  }
  if (target.host !== base.host || target.protocol !== base.protocol) {
    return { ok: false, reason: 'send path must not change the host' };
  }
  return { ok: true, url: joined };
}

/**
 * Why a send failed, safe to log: the provider's HTTP status (null when no
 * answer came) and a short reason that never holds a credential, the phone,
 * the message or the provider's answer.
 */
export class SmsSendFailure extends Error {
  override readonly name = 'SmsSendFailure';
  constructor(readonly status: number | null, reason: string) {
    super(reason);
  }
}

/**
 * A cause that is safe to keep: the policy's fixed reason, or only the name and
 * code of a transport error (never its message, which may quote the URL).
 */
function safeCause(err: unknown): SmsSendFailure {
  if (err instanceof OutboundRefused) return new SmsSendFailure(null, `refused: ${err.message}`);
  const name = err instanceof Error ? err.name : 'Error';
  const code = (err as { code?: unknown } | null)?.code;
  return new SmsSendFailure(null, `no answer: ${typeof code === 'string' && /^[A-Z0-9_]+$/.test(code) ? `${name} ${code}` : name}`);
}

function providerError(cause: SmsSendFailure): AppError {
  const err = new AppError('upstream', SMS_PROVIDER_ERROR);
  err.cause = cause;
  return err;
}

/**
 * Sends one SMS through an HTTP provider. `timeoutMs` exists for tests; the
 * service uses the 10 s default.
 */
export async function sendSms(
  req: SmsSendRequest,
  policy: OutboundPolicy,
  resolve?: Resolver,
  timeoutMs: number = SMS_TIMEOUT_MS,
): Promise<void> {
  const target = buildSmsTargetUrl(req.baseUrl, req.sendPath);
  if (!target.ok) throw providerError(new SmsSendFailure(null, `refused: ${target.reason}`));

  let status: number;
  try {
    const res = await postJsonPinned(target.url, {
      headers: {
        'X-Client-Id': req.clientId ?? '',
        'X-Client-Secret': req.clientSecret ?? '',
        'X-Api-Key': req.apiKey ?? '',
      },
      body: { to: req.to, message: req.message, from: req.from, route: req.route },
      timeoutMs,
      policy,
      ...(resolve ? { resolve } : {}),
    });
    status = res.status;
  } catch (err) {
    throw providerError(safeCause(err));
  }
  if (status < 200 || status > 299) throw providerError(new SmsSendFailure(status, `provider answered HTTP ${status}`));
}
