import { readFileSync } from 'node:fs';
import type { Infra } from '../../infra/index.js';
import type { UpdateChannel } from '../../config/update-settings.js';
import { packageRoot } from '../../config/layout.js';
import { SERVICE_VERSION } from '../../shared/version.js';
import { AppError } from '../../shared/errors.js';
import type { JobContext, JobRunner } from '../jobs/index.js';
import { createSnapshotter } from './db-snapshot.js';
import type { DatabaseSnapshotter } from './db-snapshot.js';
import type { HealthProbe } from './health-wait.js';
import type { ApplyUpdateInput } from './schema.js';
import { UpdateService, publicKeyPath } from './update.service.js';

export { UpdateCheckSchema, ApplyUpdateBody } from './schema.js';
export { lockDownTree } from './install-tree.js';
export { compareVersions } from './version-order.js';
export type { UpdateCheck, ApplyUpdateInput, UpdateReport } from './schema.js';
export type { UpdateService } from './update.service.js';
export type { DatabaseSnapshotter, Snapshot } from './db-snapshot.js';

export const UPDATE_JOB = 'update.apply';

/** A short-lived read-only API key for the health check (the api-keys module's). */
export type ProbeKeys = { create(): Promise<{ id: string; key: string }>; revoke(id: string): Promise<void> };

export type UpdatesDeps = {
  channel(): Promise<UpdateChannel>;
  probeKeys: ProbeKeys;
  /** Tests: the release key and version of the running program, an extra CA for the feed server. */
  publicKeyFile?: string;
  currentVersion?: string;
  ca?: string;
  snapshotter?: DatabaseSnapshotter;
};

/** The PEM of MAILSVC_UPDATE_CA_FILE, or undefined when it is not set. */
function feedCa(file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new AppError('unavailable', `MAILSVC_UPDATE_CA_FILE (${file}) cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}): put the mirror's CA certificate there, or remove the setting from /etc/mailsvc/mailsvc.conf`);
  }
}

/**
 * Updates: check a channel's signed feed; apply a release as a job that rolls
 * itself back (docs/updates.md). The apply job runs outside the service it
 * restarts: the CLI (`settings apply-update`) or mailsvc-update.service.
 */
export function createUpdatesModule(infra: Pick<Infra, 'settings' | 'db' | 'outbound' | 'helper' | 'dialect'>, deps: UpdatesDeps) {
  const s = infra.settings;
  const service = new UpdateService({
    settings: s.updates,
    outbound: infra.outbound,
    db: infra.db,
    channel: deps.channel,
    currentVersion: deps.currentVersion ?? SERVICE_VERSION,
    publicKeyFile: deps.publicKeyFile ?? publicKeyPath(packageRoot()),
    // Read when a feed is fetched: a missing or unreadable file then says which setting names it.
    get ca(): string | undefined {
      return deps.ca ?? feedCa(s.updates.caFile);
    },
  });
  const host = s.apiHost === '0.0.0.0' || s.apiHost === '::' ? '127.0.0.1' : s.apiHost;
  const probe: HealthProbe = {
    baseUrl: `http://${host.includes(':') ? `[${host}]` : host}:${s.apiPort}`,
    open: () => deps.probeKeys.create(),
    close: (k) => deps.probeKeys.revoke(k.id),
  };
  return {
    service,
    /** Registers the apply job on a runner (only a process that does not serve the API does). */
    registerApply(runner: JobRunner): void {
      runner.register(UPDATE_JOB, async (input: ApplyUpdateInput | null, ctx: JobContext) => {
        const { applyUpdate } = await import('./update-apply.js');
        return applyUpdate(
          {
            updates: service,
            snapshotter: deps.snapshotter ?? createSnapshotter(infra.dialect, s.databaseUrl),
            helper: infra.helper,
            probe,
            env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
          },
          input ?? {},
          ctx,
        );
      });
    },
  };
}
export type UpdatesModule = ReturnType<typeof createUpdatesModule>;
