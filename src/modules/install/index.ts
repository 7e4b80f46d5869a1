import { join } from 'node:path';
import type { Infra } from '../../infra/index.js';
import { packageRoot } from '../../config/layout.js';
import { readSettingsFile } from '../../config/settings-file.js';
import { exec, run } from '../../adapters/exec.js';
import { AppError } from '../../shared/errors.js';
import { SERVICE_VERSION } from '../../shared/version.js';
import { healthUrl, waitForService } from '../../shared/service-wait.js';
import { install, uninstall } from './installer.js';
import type { InstallReport } from './installer.js';
import { readSwitches } from './unit-plan.js';
import { hostWiring } from './wiring/context.js';
import { wireDaemons } from './wiring/index.js';
import type { WiredDaemon } from './wiring/index.js';

/** How `mailsvc install` treats the mail daemons: --dry-run (only say what would change), --no-wire DAEMON. */
export type WiringOptions = { dryRun: boolean; noWire: readonly WiredDaemon[] };

export type { InstallReport } from './installer.js';
export { installCommands } from './commands.js';
export { ownershipPlan, snapshotsDir } from './ownership-plan.js';
export type { PlanEntry, Role } from './ownership-plan.js';

/**
 * `mailsvc limits apply` as the service user, through the helper (as the
 * timers and the API do it), so the daemons just wired run with the limits
 * mailsvc shows; then the helper is stopped: its socket starts it again when
 * root is next needed. null: applied; otherwise what is left to do.
 */
async function applyLimits(): Promise<string | null> {
  const r = await run('runuser', ['-u', 'mailsvc', '--', '/usr/local/bin/mailsvc', 'limits', 'apply', '--json'], { timeoutMs: 600_000 }).catch((err: unknown) => ({ code: -1, stdout: '', stderr: err instanceof Error ? err.message : String(err) }));
  await exec('systemctl', ['stop', 'mailsvc-helper.service'], { okCodes: [0, 1, 5] }).catch(() => undefined);
  if (r.code === 0) return null;
  const why = (r.stderr.trim().split('\n').at(-1) ?? '').slice(0, 300) || `exit ${r.code}`;
  return `apply the limits to the daemons: mailsvc limits apply (at install it failed: ${why})`;
}

/** `mailsvc install` / `uninstall` (docs/install.md). */
export function createInstallModule(infra: Pick<Infra, 'settings'>) {
  const s = infra.settings;
  const switches = () => readSwitches({ ...readSettingsFile(s.configFile), ...process.env }, s.updates.installRoot);
  const pkg = packageRoot();
  return {
    install: async (root: string, serviceUser?: string, wiring: WiringOptions = { dryRun: false, noWire: [] }): Promise<InstallReport> => {
      if (wiring.dryRun) {
        if (root !== '/') throw new AppError('bad_request', '--dry-run previews the wiring of this host\'s mail daemons: it does not go with --root');
        if (process.getuid?.() !== 0) throw new AppError('forbidden', 'mailsvc install --dry-run reads the daemons\' configuration as root: run it as root');
        const report = await wireDaemons(hostWiring(s, join(pkg, 'deploy'), wiring));
        return { root, done: [], skipped: ['everything (--dry-run): mailsvc itself (user, release, settings, units) and the mail daemons below are left as they are'], left: [], wiring: report };
      }
      return install({
        root,
        serviceUser,
        switches: switches(),
        packageRoot: pkg,
        layout: s.layout,
        version: SERVICE_VERSION,
        templateDir: join(pkg, 'deploy', 'systemd'),
        // As the service user, so an SQLite file it creates is the service's.
        waitForService: () => waitForService(healthUrl(s.apiHost, s.apiPort), s.secretKey === undefined ? join(s.dataDir, 'secret.key') : null),
        migrate: async () => (await exec('runuser', ['-u', 'mailsvc', '--', '/usr/local/bin/mailsvc', 'db', 'migrate'], { timeoutMs: 600_000 })).stdout.trim() || 'applied',
        wire: () => wireDaemons(hostWiring(s, join(pkg, 'deploy'), wiring)),
        applyLimits,
      });
    },
    uninstall: (root: string): Promise<InstallReport> => uninstall(root, s.updates.installRoot),
  };
}
export type InstallModule = ReturnType<typeof createInstallModule>;
