import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import { serviceKey } from '../../db/service-keys.js';
import type { AccountLookup } from '../accounts/index.js';
import type { RouteKit } from '../route-types.js';
import { AppPasswordService } from './app-password.service.js';
import { AppPasswordCreations } from './creation-limits.js';
import type { AppPasswordLimits } from './creation-limits.js';

export { appPasswordCommands } from './commands.js';
export type { AppPasswordCreated, AppPasswordView } from './schema.js';
/** The response schemas, for another front door to the same service (the user portal). */
export { AppPasswordCreated as AppPasswordCreatedSchema, AppPasswordSchema } from './schema.js';
export type { AppPasswordService } from './app-password.service.js';
export type { AppPasswordLimits } from './creation-limits.js';
export { APP_PASSWORD_NAME_MAX } from './schema.js';

/** What the mail login path asks: the account, and is this an app password of it? Then: record its use. */
export type AppPasswordVerifier = Pick<AppPasswordService, 'findLogin' | 'recordUse'>;

export function createAppPasswordsModule(infra: Pick<Infra, 'db' | 'dialect' | 'box' | 'clock' | 'redis'>, deps: { accounts: AccountLookup; limits: () => AppPasswordLimits }) {
  let key: Promise<Buffer> | undefined;
  const hashKey = (): Promise<Buffer> => {
    // Kept if it worked; asked again after a failure (the database was briefly away).
    key ??= serviceKey(infra.db, infra.dialect, infra.box, 'app-password-hash').catch((err: unknown) => {
      key = undefined;
      throw err;
    });
    return key;
  };
  const service = new AppPasswordService(infra.db, deps.accounts, hashKey, infra.clock, deps.limits, new AppPasswordCreations(infra.redis));
  return {
    service,
    accounts: deps.accounts,
    /** Reads (or on a new database makes) the hash key now, as the service does at start. */
    prepare: async (): Promise<void> => {
      await hashKey();
    },
    routes: async (app: FastifyInstance, kit: RouteKit) => (await import('./routes.js')).appPasswordRoutes(app, service, kit.hooks, kit.errors),
  };
}
export type AppPasswordsModule = ReturnType<typeof createAppPasswordsModule>;
