import { SettingsError } from './settings-error.js';

export type UserVerification = 'required' | 'preferred' | 'discouraged';
export type PasskeyRequirement = 'no' | 'panel' | 'all';
export const PASSKEY_REQUIREMENTS: readonly PasskeyRequirement[] = ['no', 'panel', 'all'];

export type WebauthnSettings = Readonly<{
  /**
   * MAILSVC_PANEL_ORIGIN: the panel's origin as the browser sees it (`https://mail.example.org`).
   * The only origin a passkey ceremony is accepted from; never taken from a request header.
   * Unset: passkeys are off (their routes answer 400 saying so).
   */
  origin: string | undefined;
  /** MAILSVC_WEBAUTHN_RP_ID: the relying party ID, the origin's host name or a parent domain of it (default: the host name). */
  rpId: string | undefined;
  /** MAILSVC_WEBAUTHN_RP_NAME: the name an authenticator shows (default mailsvc). */
  rpName: string;
  /** MAILSVC_WEBAUTHN_USER_VERIFICATION: for a passkey as the second factor (passwordless always requires it). */
  userVerification: UserVerification;
  /** MAILSVC_WEBAUTHN_TIMEOUT: seconds a ceremony's challenge lives (and the browser waits). */
  timeoutSeconds: number;
  /** MAILSVC_WEBAUTHN_PASSWORDLESS: the default of the passwordless switch (a stored value wins). */
  passwordless: boolean;
  /** MAILSVC_WEBAUTHN_REQUIRED: the default of the passkey policy (a stored value wins). */
  required: PasskeyRequirement;
}>;

type Source = Record<string, string | undefined>;

const value = (src: Source, key: string): string | undefined => (src[key] === undefined || src[key] === '' ? undefined : src[key]);

function yesNo(src: Source, key: string): boolean {
  const v = value(src, key)?.toLowerCase();
  if (v === undefined) return false;
  if (['yes', 'true', '1', 'on'].includes(v)) return true;
  if (['no', 'false', '0', 'off'].includes(v)) return false;
  throw new SettingsError(key, `expected yes or no, got "${v}"`);
}

/** The origin, checked: https (or http on localhost for development), no path, query or fragment. */
function panelOrigin(src: Source): string | undefined {
  const raw = value(src, 'MAILSVC_PANEL_ORIGIN');
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SettingsError('MAILSVC_PANEL_ORIGIN', `must be an origin such as https://mail.example.org, got "${raw}"`);
  }
  const local = url.hostname === 'localhost';
  if (!(url.protocol === 'https:' || (url.protocol === 'http:' && local))) {
    throw new SettingsError('MAILSVC_PANEL_ORIGIN', 'must use https (http only for localhost): WebAuthn needs a secure context');
  }
  if ((url.pathname !== '/' && url.pathname !== '') || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new SettingsError('MAILSVC_PANEL_ORIGIN', 'must be an origin only (scheme, host, port), without a path');
  }
  return url.origin;
}

export function loadWebauthnSettings(src: Source): WebauthnSettings {
  const origin = panelOrigin(src);
  const host = origin === undefined ? undefined : new URL(origin).hostname;
  const rpId = value(src, 'MAILSVC_WEBAUTHN_RP_ID')?.toLowerCase() ?? host;
  if (rpId !== undefined) {
    if (host === undefined) throw new SettingsError('MAILSVC_WEBAUTHN_RP_ID', 'needs MAILSVC_PANEL_ORIGIN');
    if (/^[\d.]+$|:/.test(rpId)) throw new SettingsError('MAILSVC_WEBAUTHN_RP_ID', 'must be a domain name, not an address (WebAuthn refuses addresses)');
    if (!(host === rpId || host.endsWith(`.${rpId}`))) throw new SettingsError('MAILSVC_WEBAUTHN_RP_ID', `must be the host name of MAILSVC_PANEL_ORIGIN (${host}) or a parent domain of it`);
  }
  const uv = value(src, 'MAILSVC_WEBAUTHN_USER_VERIFICATION') ?? 'preferred';
  if (!['required', 'preferred', 'discouraged'].includes(uv)) throw new SettingsError('MAILSVC_WEBAUTHN_USER_VERIFICATION', `must be required, preferred or discouraged, got "${uv}"`);
  const required = value(src, 'MAILSVC_WEBAUTHN_REQUIRED') ?? 'no';
  if (!(PASSKEY_REQUIREMENTS as readonly string[]).includes(required)) throw new SettingsError('MAILSVC_WEBAUTHN_REQUIRED', `must be no, panel or all, got "${required}"`);
  const timeout = value(src, 'MAILSVC_WEBAUTHN_TIMEOUT') ?? '120';
  const seconds = /^\d+$/.test(timeout) ? Number(timeout) : NaN;
  if (!(seconds >= 30 && seconds <= 600)) throw new SettingsError('MAILSVC_WEBAUTHN_TIMEOUT', `must be a whole number from 30 to 600, got "${timeout}"`);
  return Object.freeze({
    origin,
    rpId,
    rpName: value(src, 'MAILSVC_WEBAUTHN_RP_NAME') ?? 'mailsvc',
    userVerification: uv as UserVerification,
    timeoutSeconds: seconds,
    passwordless: yesNo(src, 'MAILSVC_WEBAUTHN_PASSWORDLESS'),
    required: required as PasskeyRequirement,
  });
}
