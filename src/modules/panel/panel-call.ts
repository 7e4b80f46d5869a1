import { randomBytes, timingSafeEqual } from 'node:crypto';

/** The header with which the panel's proxy marks the API calls it makes in-process. */
export const PANEL_CALL_HEADER = 'x-mailsvc-panel-call';
/** Set on the 403 of a destructive action asked without a fresh second factor. */
export { REAUTH_HEADER } from '../../shared/errors.js';
export const REAUTH_DETAIL = 'This action needs a fresh second factor: confirm your sign-in (password and code) and try again';

/**
 * Marks the calls the panel's proxy makes (app.inject, never the network) with
 * a random value that never leaves the process, so the admin hooks know a
 * call came from a panel session and whether its second factor is fresh. A
 * request from outside cannot carry it: it would have to guess 256 bits.
 */
export class PanelCallMarker {
  private readonly secret = randomBytes(32).toString('base64url');

  header(fresh: boolean): string {
    return `${this.secret}.${fresh ? '1' : '0'}`;
  }

  /** null: not a panel call (no header, or not ours). */
  read(value: string | string[] | undefined): { fresh: boolean } | null {
    if (typeof value !== 'string') return null;
    const dot = value.lastIndexOf('.');
    const given = Buffer.from(value.slice(0, dot));
    const own = Buffer.from(this.secret);
    if (dot < 0 || given.length !== own.length || !timingSafeEqual(given, own)) return null;
    return { fresh: value.slice(dot + 1) === '1' };
  }
}
