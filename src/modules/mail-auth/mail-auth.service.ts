import type { Logger } from 'pino';
import { verifyMailPassword } from '../accounts/index.js';
import type { AppPasswordVerifier } from '../app-passwords/index.js';

export type MailAuthRequest = { user: string; password: string; protocol: string; remoteIp: string };
export type MailAuthResult =
  | {
      ok: true;
      user: string;
      via: 'app_password' | 'primary';
      /** The account's quota (0: none), for the userdb fields the hook may answer with. */
      quotaBytes: number;
      /**
       * Bookkeeping that does not decide the answer (the app password's last
       * use), for the caller to run once the answer is on its way; it logs its
       * own failures and never rejects.
       */
      afterAnswer?: () => Promise<void>;
    }
  | { ok: false };

/**
 * The check behind Dovecot's passdb (and so Postfix SMTP AUTH): an active,
 * unexpired app password of the account, or the primary password unless the
 * account requires app passwords. Inactive accounts and domains get nothing.
 */
export class MailAuthService {
  constructor(
    private readonly appPasswords: AppPasswordVerifier,
    private readonly log: Logger,
  ) {}

  async check(req: MailAuthRequest): Promise<MailAuthResult> {
    const user = req.user.trim().toLowerCase();
    const login = user.includes('@') && user.length <= 320 ? await this.appPasswords.findLogin(user, req.password) : undefined;
    if (!login || login.account.active !== 1 || login.account.domain_active !== 1) return this.refuse(req, 'unknown or inactive account');
    const { account } = login;
    const appId = login.appPasswordId;
    if (appId !== null) {
      this.log.info({ user: account.address, protocol: req.protocol, ip: req.remoteIp, app_password: appId }, 'mail login accepted');
      const afterAnswer = () =>
        this.appPasswords.recordUse(appId, req.remoteIp).catch((err: unknown) => {
          this.log.error({ err: { message: err instanceof Error ? err.message : String(err) }, user: account.address, app_password: appId }, 'could not record the app password\'s use');
        });
      return { ok: true, user: account.address, via: 'app_password', quotaBytes: account.quota_bytes, afterAnswer };
    }
    if (account.require_app_password === 1) return this.refuse(req, 'account requires an app password');
    if (await verifyMailPassword(account.password_hash, req.password)) {
      this.log.info({ user: account.address, protocol: req.protocol, ip: req.remoteIp }, 'mail login accepted');
      return { ok: true, user: account.address, via: 'primary', quotaBytes: account.quota_bytes };
    }
    return this.refuse(req, 'wrong password');
  }

  private refuse(req: MailAuthRequest, why: string): MailAuthResult {
    this.log.info({ user: req.user.slice(0, 320), protocol: req.protocol, ip: req.remoteIp, reason: why }, 'mail login refused');
    return { ok: false };
  }
}
