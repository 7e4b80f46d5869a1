import type { AnyModuleManifest } from '../modules/module-types.js';

/**
 * Every module, one line each (its folder's module.ts), in the order their
 * routes are registered and their commands listed in `mailsvc --help`. A
 * module's manifest loads only its commands; the module itself is imported
 * and built when something first asks for it. (Loaders rather than a
 * top-level await: the bundle puts the manifests in the chunk that holds this
 * list, and a chunk cannot await its own import.)
 */
const MODULE_LIST = [
  // First: its hooks time every route registered after it.
  () => import('../modules/metrics/module.js'),
  () => import('../modules/auth/module.js'),
  () => import('../modules/mfa/module.js'),
  () => import('../modules/sms/module.js'),
  () => import('../modules/health/module.js'),
  () => import('../modules/domains/module.js'),
  () => import('../modules/routing/module.js'),
  () => import('../modules/accounts/module.js'),
  () => import('../modules/app-passwords/module.js'),
  () => import('../modules/autoconfig/module.js'),
  () => import('../modules/send-limits/module.js'),
  () => import('../modules/aliases/module.js'),
  () => import('../modules/mail-auth/module.js'),
  () => import('../modules/portal/module.js'),
  () => import('../modules/api-keys/module.js'),
  () => import('../modules/audit/module.js'),
  () => import('../modules/queue/module.js'),
  () => import('../modules/limits/module.js'),
  () => import('../modules/bans/module.js'),
  () => import('../modules/firewall/module.js'),
  () => import('../modules/updates/module.js'),
  () => import('../modules/settings/module.js'),
  () => import('../modules/install/module.js'),
  () => import('../modules/stats/module.js'),
  () => import('../modules/report/module.js'),
  () => import('../modules/dns/module.js'),
  () => import('../modules/certs/module.js'),
  () => import('../modules/panel/module.js'),
  () => import('../modules/backups/module.js'),
  () => import('../modules/tls/module.js'),
  () => import('../modules/doctor/module.js'),
  () => import('../modules/jobs/module.js'),
];

let loaded: Promise<readonly AnyModuleManifest[]> | undefined;

/** The manifests at these places of the list (a command's modules, from the command index), in the list's order. */
export function loadModules(places: readonly number[]): Promise<readonly AnyModuleManifest[]> {
  return Promise.all(
    [...places].sort((a, b) => a - b).map(async (i) => {
      const load = MODULE_LIST[i];
      if (!load) throw new Error(`no module at place ${i} of the module list: rebuild mailsvc (npm run build)`);
      // import() gives the same module every time: the same manifest as loadModuleList's.
      return (await load()).default as AnyModuleManifest;
    }),
  );
}

/** The manifests of the list, loaded once (each is small: its commands, no module code). */
export function loadModuleList(): Promise<readonly AnyModuleManifest[]> {
  loaded ??= Promise.all(MODULE_LIST.map(async (load) => (await load()).default as AnyModuleManifest));
  return loaded;
}
