import type { Infra } from '../infra/index.js';
import type { ApiKeysModule } from '../modules/api-keys/index.js';
import type { AuditModule } from '../modules/audit/index.js';
import type { AuthModule } from '../modules/auth/index.js';
import type { BackupsModule } from '../modules/backups/index.js';
import type { DnsModule } from '../modules/dns/index.js';
import type { DoctorModule } from '../modules/doctor/index.js';
import type { ReportModule } from '../modules/report/index.js';
import type { DomainsModule } from '../modules/domains/index.js';
import type { JobRunner, JobsModule } from '../modules/jobs/index.js';
import type { LimitsModule } from '../modules/limits/index.js';
import type { MfaModule } from '../modules/mfa/index.js';
import type { PanelModule } from '../modules/panel/index.js';
import type { SettingsModule } from '../modules/settings/index.js';
import type { StatsModule } from '../modules/stats/index.js';
import type { UpdatesModule } from '../modules/updates/index.js';

/**
 * How the host-operation modules (updates, settings, the panel, DNS, stats,
 * backups) are built from the others. `Modules` (modules.ts) keeps one
 * accessor per module and calls these; they reach the modules they need
 * through the accessors below, so each is still built once and only when
 * asked for.
 */
export type ModuleGraph = {
  readonly infra: Infra;
  apiKeys(): Promise<ApiKeysModule>;
  audit(): Promise<AuditModule>;
  auth(): Promise<AuthModule>;
  domains(): Promise<DomainsModule>;
  jobs(): Promise<JobsModule>;
  limits(): Promise<LimitsModule>;
  mfa(): Promise<MfaModule>;
  updates(): Promise<UpdatesModule>;
  report(): Promise<ReportModule>;
  backups(): Promise<BackupsModule>;
};

/** What `mailsvc settings …` needs: the settings, the check, and a runner that runs update jobs here. */
export type SettingsCli = { service: SettingsModule['service']; checkUpdate: SettingsModule['checkUpdate']; runner: JobRunner; updateJob: string };

export async function buildUpdates(m: ModuleGraph): Promise<UpdatesModule> {
  const [{ createUpdatesModule }, apiKeys] = await Promise.all([import('../modules/updates/index.js'), m.apiKeys()]);
  return createUpdatesModule(m.infra, {
    channel: async () => (await import('../modules/settings/index.js')).createSettingsStore(m.infra).channel(),
    // A read-only key for the updater's health check, alive an hour at most, revoked when the update ends.
    probeKeys: {
      create: async () => {
        const k = await apiKeys.service.create({ name: 'mailsvc update health check', scopes: ['read'], expires_at: new Date(m.infra.clock.now() + 3600_000).toISOString() }, 'mailsvc-update');
        return { id: k.id, key: k.key };
      },
      revoke: (id) => apiKeys.service.revoke(id),
    },
  });
}

/** The web panel (only served with MAILSVC_ENABLE_WEB_PANEL=yes). */
export async function buildPanel(m: ModuleGraph): Promise<PanelModule> {
  const [{ createPanelModule }, auth, mfa, audit] = await Promise.all([import('../modules/panel/index.js'), m.auth(), m.mfa(), m.audit()]);
  return createPanelModule(m.infra, {
    auth: auth.auth,
    tokens: auth.tokens,
    enrolled: async () => (await mfa.service.enrolledMethods()).length > 0,
    recordLogout: async (ip, tokenId) => {
      await audit.service.record({ actor: m.infra.settings.adminUsername, tokenId, source: ip, action: 'POST /panel/session/logout', target: null, summary: {}, result: 'ok' });
    },
  });
}

export async function buildDns(m: ModuleGraph): Promise<DnsModule> {
  const [{ createDnsModule }, domains, limits, jobs] = await Promise.all([import('../modules/dns/index.js'), m.domains(), m.limits(), m.jobs()]);
  return createDnsModule(m.infra, {
    domains: domains.service,
    keyBits: () => limits.service.value('dkim-key-bits'),
    rotationDays: () => limits.service.value('dkim-rotation-days'),
    graceDays: () => limits.service.value('dkim-rotation-grace-days'),
    activeDomains: () => domains.service.activeNames(),
    jobs: jobs.runner,
  });
}

/**
 * The settings module as the service builds it: an update job may be queued
 * here but never runs in this process (it restarts it): a queued one found
 * at start is failed at once.
 */
export async function buildSettings(m: ModuleGraph): Promise<SettingsModule> {
  const [{ createSettingsModule }, { UPDATE_JOB }, jobs] = await Promise.all([import('../modules/settings/index.js'), import('../modules/updates/index.js'), m.jobs()]);
  jobs.runner.register(UPDATE_JOB, () => Promise.reject(new Error('an update job runs in mailsvc-update@<job>.service or the CLI, never in the service it restarts')));
  return createSettingsModule(m.infra, { updates: () => m.updates(), jobs: () => Promise.resolve(jobs.runner) });
}

export async function buildSettingsCli(m: ModuleGraph): Promise<SettingsCli> {
  const [{ createSettingsModule }, { UPDATE_JOB }, jobs, updates] = await Promise.all([import('../modules/settings/index.js'), import('../modules/updates/index.js'), m.jobs(), m.updates()]);
  updates.registerApply(jobs.runner);
  const settings = createSettingsModule(m.infra, { updates: () => Promise.resolve(updates), jobs: () => Promise.resolve(jobs.runner) });
  return { service: settings.service, checkUpdate: settings.checkUpdate, runner: jobs.runner, updateJob: UPDATE_JOB };
}

export async function buildStats(m: ModuleGraph): Promise<StatsModule> {
  const [{ createStatsModule }, limits] = await Promise.all([import('../modules/stats/index.js'), m.limits()]);
  return createStatsModule(m.infra, { retentionDays: () => limits.service.value('stats-retention-days') });
}

export async function buildBackups(m: ModuleGraph): Promise<BackupsModule> {
  const [{ createBackupsModule }, jobs] = await Promise.all([import('../modules/backups/index.js'), m.jobs()]);
  // The limits are read when used: a restore on a fresh host has no limits table yet.
  const retention = {
    get: async () => (await m.limits()).service.value('backup-retention-days'),
    set: async (days: number) => void (await (await m.limits()).service.update({ 'backup-retention-days': days })),
  };
  return createBackupsModule(m.infra, { retention, runner: jobs.runner });
}

/** The doctor: each source is built when its check runs, so a database that is away fails those checks, not the doctor. */
export async function buildDoctor(m: ModuleGraph): Promise<DoctorModule> {
  const [{ createDoctorModule }, { probeDaemon }, { latestPerDomain }] = await Promise.all([import('../modules/doctor/index.js'), import('../modules/report/index.js'), import('../modules/dns/index.js')]);
  const ms = m.infra.settings.stats.probeTimeoutMs;
  return createDoctorModule(m.infra, {
    sources: {
      components: async () => {
        const [found, nginx] = await Promise.all([(await m.report()).service.components(), probeDaemon({ name: 'nginx', pkg: 'nginx', unit: 'nginx' }, ms)]);
        return [...found, nginx];
      },
      limits: async () => (await m.limits()).show(),
      lastBackup: async () => (await m.backups()).health.lastBackup(),
      activeDomains: async () => (await m.domains()).service.activeNames(),
      deliverability: async () => (await latestPerDomain(m.infra.db, { limit: 500, offset: 0 })).items,
    },
  });
}
