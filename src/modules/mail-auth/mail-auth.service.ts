import type { Logger } from 'pino';
import { verifyMailPassword } from '../accounts/index.js';
import type { AccountLookup } from '../accounts/index.js';
import type { AppPasswordVerifier } from '../app-passwords/index.js';

export type MailAuthRequest = { user: string; password: string; protocol: string; remoteIp: string };
export type MailAuthResult = { ok: true; user: string; via: 'app_password' | 'primary' } | { ok: false };

/**
 * The check behind Dovecot's passdb (and so Postfix SMTP AUTH): an active,
 * unexpired app password of the account, or the primary password unless the
 * account requires app passwords. Inactive accounts and domains get nothing.
 */
export class MailAuthService {
  constructor(
    private readonly accounts: Pick<AccountLookup, 'findForLogin'>,
    private readonly appPasswords: AppPasswordVerifier,
    private readonly log: Logger,
  ) {}

  async check(req: MailAuthRequest): Promise<MailAuthResult> {
    const user = req.user.trim().toLowerCase();
    const account = user.includes('@') && user.length <= 320 ? await this.accounts.findForLogin(user) : undefined;
    if (!account || account.active !== 1 || account.domain_active !== 1) return this.refuse(req, 'unknown or inactive account');
    const appId = await this.appPasswords.verify(account.id, req.password, req.remoteIp);
    if (appId !== null) {
      this.log.info({ user: account.address, protocol: req.protocol, ip: req.remoteIp, app_password: appId }, 'mail login accepted');
      return { ok: true, user: account.address, via: 'app_password' };
    }
    if (account.require_app_password === 1) return this.refuse(req, 'account requires an app password');
    if (await verifyMailPassword(account.password_hash, req.password)) {
      this.log.info({ user: account.address, protocol: req.protocol, ip: req.remoteIp }, 'mail login accepted');
      return { ok: true, user: account.address, via: 'primary' };
    }
    return this.refuse(req, 'wrong password');
  }

  private refuse(req: MailAuthRequest, why: string): MailAuthResult {
    this.log.info({ user: req.user.slice(0, 320), protocol: req.protocol, ip: req.remoteIp, reason: why }, 'mail login refused');
    return { ok: false };
  }
}
