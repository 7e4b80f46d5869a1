import type { Settings } from '../config/settings.js';
import { createDb } from '../db/database.js';
import { migrateToLatest } from '../db/migrate.js';
import { createInfra } from '../infra/index.js';
import type { Infra, InfraOptions } from '../infra/index.js';
import { Modules } from './modules.js';
import { loadModuleList } from './module-list.js';
import { ensureDataDir, looseModes } from '../infra/data-dir.js';
import type { ModuleOptions } from '../modules/module-types.js';

/**
 * The long-running service's dependencies: the infrastructure, connected and
 * migrated (as `serve` needs it), and every module.
 */
export async function openService(settings: Settings, opts: InfraOptions & ModuleOptions & { migrate?: boolean } = {}): Promise<Modules> {
  ensureDataDir(settings);
  const infra: Infra = createInfra(settings, { createKeyFile: true, openDb: createDb, ...opts });
  try {
    if (opts.migrate !== false) await migrateToLatest(infra.db);
    await infra.connectRedis();
  } catch (err) {
    await infra.close();
    throw err;
  }
  for (const line of looseModes(settings)) infra.log.warn(`data directory too open: ${line}`);
  const modules = new Modules(infra, opts, await loadModuleList());
  if (opts.migrate !== false) await modules.prepare();
  return modules;
}
