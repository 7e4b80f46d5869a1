import type { Settings } from '../config/settings.js';
import { createDb } from '../db/database.js';
import { createInfra } from '../infra/index.js';
import type { Infra, InfraOptions } from '../infra/index.js';
import { Modules } from './modules.js';
import { loadModuleList } from './module-list.js';
import { schemaOf } from './schema.js';
import { ensureDataDir, looseModes } from '../infra/data-dir.js';
import type { ModuleOptions } from '../modules/module-types.js';

/**
 * The long-running service's dependencies: the infrastructure, connected and
 * migrated (as `serve` needs it), and every module.
 */
export async function openService(settings: Settings, opts: InfraOptions & ModuleOptions & { migrate?: boolean } = {}): Promise<Modules> {
  ensureDataDir(settings);
  const list = await loadModuleList();
  const infra: Infra = createInfra(settings, { createKeyFile: true, openDb: createDb, schema: schemaOf(list), ...opts });
  try {
    if (opts.migrate !== false) await infra.schema.migrateToLatest(infra.db);
    await infra.connectRedis();
  } catch (err) {
    await infra.close();
    throw err;
  }
  for (const line of looseModes(settings)) infra.log.warn(`data directory too open: ${line}`);
  const modules = new Modules(infra, opts, list);
  if (opts.migrate !== false) await modules.prepare();
  return modules;
}
