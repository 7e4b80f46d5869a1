import type { MailboxHost } from '../../adapters/dovecot/mailbox-host.js';
import { defineModule } from '../module-types.js';
import { portalCommands } from './commands.js';
import type { PortalModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    portal: PortalModule;
  }
  interface ModuleOptions {
    /** Dovecot for the portal (quota, Sieve) other than through the privileged helper (tests). */
    mailboxHost?: MailboxHost | undefined;
  }
}

const ACTIONS: readonly [string, string][] = [
  ['portal: sign in', 'a mailbox user signed in to the user portal (actor: the mailbox)'],
  ['portal: sign out', 'a mailbox user signed out of the user portal'],
  ['portal: change password', 'a mailbox user changed the mailbox password in the portal (the password itself never)'],
  ['portal: create app password', 'a mailbox user made an app password in the portal (its id, name and expiry; the password never)'],
  ['portal: revoke app password', 'a mailbox user revoked one of its app passwords in the portal'],
  ['portal: set forwarding', 'a mailbox user set or cleared its forwarding (target, keep a copy)'],
  ['portal: set out-of-office reply', 'a mailbox user set or switched off its out-of-office reply (on, dates, days)'],
  ['portal: enable TOTP', 'a mailbox user turned on TOTP for its portal sign-in'],
  ['portal: disable TOTP', 'a mailbox user turned off TOTP for its portal sign-in'],
];

export default defineModule({
  name: 'portal',
  doc: 'docs/portal.md',
  http: true,
  audits: ACTIONS.map(([action, when]) => ({ action, when })),
  migrations: { '0019_user_portal': () => import('./migrations/0019_user_portal.js') },
  build: async (ctx) => {
    const [{ createPortalModule }, { HelperMailboxHost }, accounts, appPasswords, audit, domains, autoconfig] = await Promise.all([
      import('./index.js'),
      import('../../adapters/dovecot/mailbox-host.js'),
      ctx.get('accounts'),
      ctx.get('app-passwords'),
      ctx.get('audit'),
      ctx.get('domains'),
      ctx.get('autoconfig'),
    ]);
    return createPortalModule(ctx.infra, {
      accounts: accounts.lookup,
      passwords: accounts.service,
      appPasswords: appPasswords.service,
      audit: audit.service,
      domains: domains.service,
      mailbox: ctx.options.mailboxHost ?? new HelperMailboxHost(ctx.infra.helper),
      // The Apple profile of the autoconfiguration module: the same ports and TLS modes its answers name.
      profiles: (input) => autoconfig.renderMobileconfig(input),
    });
  },
  commands: (program, cli) => portalCommands(program, cli.run()),
  listens: {
    // A deleted account's sessions, TOTP, rules and switch go in the same transaction.
    'account.deleting': async (ctx) => {
      const portal = await ctx.get('portal');
      return { within: (tx, account) => portal.forgetAccount(tx, account) };
    },
    // A new password, whoever set it, ends the mailbox's portal sessions (but the one that changed it).
    // Its repository alone, not the module: the module needs the secret key (CSRF), and `accounts passwd` must work before the service ever made one.
    'account.password-changed': async (ctx) => {
      const { PortalRepository } = await import('./portal.repository.js');
      const repo = new PortalRepository(ctx.infra.db);
      return {
        within: async (tx, account) => {
          await repo.removeSessionsOf(account.id, account.keepSession, tx);
        },
      };
    },
    'domain.deleting': async (ctx) => {
      const portal = await ctx.get('portal');
      return { within: (tx, domain) => portal.forgetDomain(tx, domain.name) };
    },
  },
});
