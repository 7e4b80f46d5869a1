import type { MailSessionKicker } from '../adapters/dovecot/doveadm.js';
import type { Infra } from '../infra/index.js';
import type { AccountLookup, AccountsModule } from '../modules/accounts/index.js';
import type { AliasesModule } from '../modules/aliases/index.js';
import type { BansModule } from '../modules/bans/index.js';
import type { BackupsModule } from '../modules/backups/index.js';
import type { FirewallModule } from '../modules/firewall/index.js';
import type { AppPasswordsModule } from '../modules/app-passwords/index.js';
import type { AdminDeps } from '../modules/auth/commands.js';
import type { AuthModule } from '../modules/auth/index.js';
import type { AuditModule } from '../modules/audit/index.js';
import type { ApiKeysModule } from '../modules/api-keys/index.js';
import type { JobsModule } from '../modules/jobs/index.js';
import type { LimitsModule } from '../modules/limits/index.js';
import { WINDOWS, sendRateLimitKey } from '../shared/send-rate.js';
import type { Limits } from '../shared/send-rate.js';
import type { DomainsModule } from '../modules/domains/index.js';
import type { DnsModule } from '../modules/dns/index.js';
import type { HealthModule } from '../modules/health/index.js';
import type { MailAuthModule } from '../modules/mail-auth/index.js';
import type { MfaModule } from '../modules/mfa/index.js';
import type { RoutingModule } from '../modules/routing/index.js';
import type { HttpModule } from '../modules/route-types.js';
import type { QueueModule } from '../modules/queue/index.js';
import type { SendLimitsModule } from '../modules/send-limits/index.js';
import type { SendFn, SmsModule } from '../modules/sms/index.js';
import type { SettingsModule } from '../modules/settings/index.js';
import type { UpdatesModule } from '../modules/updates/index.js';
import type { InstallModule } from '../modules/install/index.js';
import type { StatsModule } from '../modules/stats/index.js';
import type { MetricsModule } from '../modules/metrics/index.js';
import type { ReportModule } from '../modules/report/index.js';
import type { PanelModule } from '../modules/panel/index.js';
import type { DoctorModule } from '../modules/doctor/index.js';
import { buildBackups, buildDns, buildDoctor, buildPanel, buildSettings, buildSettingsCli, buildStats, buildUpdates } from './operations-wiring.js';
import type { SettingsCli } from './operations-wiring.js';

export type ModuleOptions = { sendSms?: SendFn | undefined; kicker?: MailSessionKicker | undefined };

/**
 * Every module, each loaded and built on first use from the shared
 * infrastructure and the small interfaces of the modules it needs. The HTTP
 * service asks for all of them; a CLI command asks for one, and only that one
 * and what it needs are even loaded (`import()`), so `domains list` never
 * loads argon2, the SMS client or Fastify. How the host-operation modules are
 * built from the others is in operations-wiring.ts.
 */
export class Modules {
  private readonly built = new Map<string, Promise<unknown>>();

  constructor(readonly infra: Infra, private readonly opts: ModuleOptions = {}) {}

  private once<T>(name: string, make: () => Promise<T>): Promise<T> {
    let p = this.built.get(name) as Promise<T> | undefined;
    if (!p) {
      p = make();
      this.built.set(name, p);
    }
    return p;
  }

  health(): Promise<HealthModule> {
    return this.once('health', async () => {
      const [{ createHealthModule }, report] = await Promise.all([import('../modules/health/index.js'), this.report()]);
      return createHealthModule(this.infra, { components: report.service, backups: async () => (await this.backups()).health.lastBackup(), timeoutMs: this.infra.settings.stats.probeTimeoutMs });
    });
  }
  sms(): Promise<SmsModule> {
    return this.once('sms', async () => (await import('../modules/sms/index.js')).createSmsModule(this.infra, { sendSms: this.opts.sendSms }));
  }
  mfa(): Promise<MfaModule> {
    return this.once('mfa', async () =>
      (await import('../modules/mfa/index.js')).createMfaModule(this.infra, {
        providers: (await this.sms()).providers,
        // Auth is built on MFA, so it is reached when a factor is enrolled, not now.
        onFactorEnrolled: async () => (await this.auth()).tokens.revokeUnverified(),
        onRecoveryCodeUsed: async ({ ip, remaining }) =>
          (await this.audit()).service.record({
            actor: this.infra.settings.adminUsername,
            tokenId: null,
            source: ip,
            action: 'mfa.recovery_code_used',
            target: null,
            summary: { remaining },
            result: 'ok',
          }),
      }),
    );
  }
  auth(): Promise<AuthModule> {
    return this.once('auth', async () => {
      const [{ createAuthModule }, mfa, sms, apiKeys] = await Promise.all([import('../modules/auth/index.js'), this.mfa(), this.sms(), this.apiKeys()]);
      const limits = (await this.limits()).service;
      // Read on every attempt: a changed api-auth-* limit holds from the next attempt, without a restart.
      const lockoutLimits = () => ({
        failLimit: limits.value('api-auth-fail-limit'),
        windowSeconds: limits.value('api-auth-fail-window'),
        blockSeconds: limits.value('api-auth-block-seconds'),
      });
      return createAuthModule(this.infra, { mfa: mfa.service, sms: sms.sender, apiKeys: apiKeys.service, lockoutLimits });
    });
  }
  domains(): Promise<DomainsModule> {
    return this.once('domains', async () =>
      // The dns module is built on the domains: reached when keys are asked for, not now.
      (await import('../modules/domains/index.js')).createDomainsModule(this.infra, {
        keys: {
          generate: async (d) => (await this.dns()).dkim.generate(d),
          stopSigning: async (d) => (await this.dns()).dkim.stopSigning(d),
          forget: async (tx, d) => (await this.dns()).dkim.forgetDomain(tx, d),
          restoreSigning: async () => void (await (await this.dns()).dkim.syncSigning()),
        },
      }),
    );
  }
  routing(): Promise<RoutingModule> {
    return this.once('routing', async () => (await import('../modules/routing/index.js')).createRoutingModule(this.infra));
  }
  accounts(): Promise<AccountsModule> {
    return this.once('accounts', async () => {
      const [{ createAccountsModule }, { DoveadmKicker }, domains, sendLimits, routing] = await Promise.all([
        import('../modules/accounts/index.js'),
        import('../adapters/dovecot/doveadm.js'),
        this.domains(),
        this.sendLimits(),
        this.routing(),
      ]);
      return createAccountsModule(this.infra, {
        domains: domains.service,
        routing: routing.guard,
        sendLimits: sendLimits.service,
        kicker: this.opts.kicker ?? new DoveadmKicker(this.infra.helper),
        // Looked up when an account is deleted: app passwords need the accounts first.
        dependents: [{ removeForAccount: async (id, tx) => (await this.appPasswords()).service.removeForAccount(id, tx) }],
      });
    });
  }
  /** The accounts as seen by a module the accounts themselves need (the send limits they notify). */
  private readonly laterAccounts: Pick<AccountLookup, 'listAll'> = { listAll: async () => (await this.accounts()).lookup.listAll() };
  sendLimits(): Promise<SendLimitsModule> {
    return this.once('send-limits', async () => {
      const [{ createSendLimitsModule }, limits] = await Promise.all([import('../modules/send-limits/index.js'), this.limits()]);
      // The global defaults are the limits send-rate-*, read per call.
      const defaults = (): Limits => Object.fromEntries(WINDOWS.map((w) => [w, limits.service.value(sendRateLimitKey(w))])) as Limits;
      return createSendLimitsModule(this.infra, { accounts: this.laterAccounts, defaults });
    });
  }
  appPasswords(): Promise<AppPasswordsModule> {
    return this.once('app-passwords', async () => {
      const [{ createAppPasswordsModule }, accounts] = await Promise.all([import('../modules/app-passwords/index.js'), this.accounts()]);
      return createAppPasswordsModule(this.infra, { accounts: accounts.lookup });
    });
  }
  aliases(): Promise<AliasesModule> {
    return this.once('aliases', async () => {
      const [{ createAliasesModule }, domains, routing] = await Promise.all([import('../modules/aliases/index.js'), this.domains(), this.routing()]);
      return createAliasesModule(this.infra, { domains: domains.service, routing: routing.guard });
    });
  }
  mailAuth(): Promise<MailAuthModule> {
    return this.once('mail-auth', async () => {
      const [{ createMailAuthModule }, accounts, appPasswords] = await Promise.all([import('../modules/mail-auth/index.js'), this.accounts(), this.appPasswords()]);
      return createMailAuthModule(this.infra, { accounts: accounts.lookup, appPasswords: appPasswords.service });
    });
  }

  apiKeys(): Promise<ApiKeysModule> {
    return this.once('api-keys', async () => (await import('../modules/api-keys/index.js')).createApiKeysModule(this.infra));
  }
  audit(): Promise<AuditModule> {
    return this.once('audit', async () => (await import('../modules/audit/index.js')).createAuditModule(this.infra));
  }
  queue(): Promise<QueueModule> {
    return this.once('queue', async () => (await import('../modules/queue/index.js')).createQueueModule(this.infra));
  }
  limits(): Promise<LimitsModule> {
    return this.once('limits', async () => {
      const limits = (await import('../modules/limits/index.js')).createLimitsModule(this.infra, {
        onChanged: async (keys) => {
          // Other processes (API instances, a running service after a CLI change) read the limits again.
          this.infra.changes.notify();
          // The per-account entries of the send-limit map hold the defaults resolved: push them again.
          if (keys.some((k) => k.startsWith('send-rate-'))) await (await this.sendLimits()).service.syncAll();
        },
        // A value an older version stored and this one refuses (dkim-key-bits 1024): a warning in the journal (the CLI: on stderr).
        onIgnored: (message, r) => this.infra.log.warn({ limit: r.key, stored: r.stored, in_force: r.in_force }, message),
      });
      // The values in force are read once here; a change signal reads them again (dropCaches).
      await limits.service.refresh();
      return limits;
    });
  }
  jobs(): Promise<JobsModule> {
    return this.once('jobs', async () => (await import('../modules/jobs/index.js')).createJobsModule(this.infra));
  }

  bans(): Promise<BansModule> {
    return this.once('bans', async () => (await import('../modules/bans/index.js')).createBansModule(this.infra));
  }

  firewall(): Promise<FirewallModule> {
    return this.once('firewall', async () => (await import('../modules/firewall/index.js')).createFirewallModule(this.infra));
  }

  updates(): Promise<UpdatesModule> {
    return this.once('updates', () => buildUpdates(this));
  }

  /** The web panel (only served with MAILSVC_ENABLE_WEB_PANEL=yes). */
  panel(): Promise<PanelModule> {
    return this.once('panel', () => buildPanel(this));
  }

  dns(): Promise<DnsModule> {
    return this.once('dns', () => buildDns(this));
  }

  /** The settings module as the service builds it (an update job never runs in it). */
  settings(): Promise<SettingsModule> {
    return this.once('settings', () => buildSettings(this));
  }

  /** What `mailsvc settings …` needs: the settings, the check, and a runner that runs update jobs here. */
  settingsCli(): Promise<SettingsCli> {
    return this.once('settings-cli', () => buildSettingsCli(this));
  }

  install(): Promise<InstallModule> {
    return this.once('install', async () => (await import('../modules/install/index.js')).createInstallModule(this.infra));
  }

  stats(): Promise<StatsModule> {
    return this.once('stats', () => buildStats(this));
  }

  metrics(): Promise<MetricsModule> {
    return this.once('metrics', async () => {
      const [{ createMetricsModule }, queue] = await Promise.all([import('../modules/metrics/index.js'), this.queue()]);
      return createMetricsModule(this.infra, { queue: queue.service });
    });
  }

  report(): Promise<ReportModule> {
    return this.once('report', async () => {
      const [{ createReportModule }, queue] = await Promise.all([import('../modules/report/index.js'), this.queue()]);
      return createReportModule(this.infra, { queue: queue.service });
    });
  }

  backups(): Promise<BackupsModule> {
    return this.once('backups', () => buildBackups(this));
  }

  /** `mailsvc doctor` and GET /admin/doctor: the other modules are reached when their check runs. */
  doctor(): Promise<DoctorModule> {
    return this.once('doctor', () => buildDoctor(this));
  }

  /** What `admin mfa reset` needs. */
  async admin(): Promise<AdminDeps> {
    const [mfa, auth] = await Promise.all([this.mfa(), this.auth()]);
    return { mfa: mfa.service, tokens: auth.tokens, notifyChanges: () => this.infra.changes.notify() };
  }

  /**
   * What the running service sets up at start, after migrations: the
   * app-password hash key, and every token revoked when the administrator's
   * password changed since the last start.
   */
  async prepare(): Promise<void> {
    await (await this.appPasswords()).prepare();
    await (await this.auth()).prepare();
    await (await this.firewall()).resumePendingRevert();
  }

  /** Every module that serves HTTP, in the order their routes are registered. */
  http(): Promise<HttpModule[]> {
    return Promise.all([
      // First: its hooks time every route registered after it.
      this.metrics(),
      this.auth(), this.mfa(), this.sms(), this.health(), this.domains(), this.accounts(), this.appPasswords(), this.sendLimits(), this.aliases(),
      this.apiKeys(), this.audit(), this.jobs(), this.queue(), this.limits(), this.bans(), this.firewall(),
      this.settings(),
      this.stats(),
      this.dns(),
      ...(this.infra.settings.enableWebPanel ? [this.panel()] : []),
      this.backups(),
      this.doctor(),
    ]);
  }

  /** Stops what runs in the background (the jobs of this process), then closes the infrastructure. */
  async close(): Promise<void> {
    if (this.built.has('jobs')) await (await this.jobs()).runner.stop();
    await this.infra.close();
  }

  /** Another process changed what the service caches (tokens, the MFA record): read it again. */
  async dropCaches(): Promise<void> {
    (await this.auth()).tokens.dropCache();
    (await this.mfa()).dropCache();
    await (await this.limits()).service.refresh();
  }
}
