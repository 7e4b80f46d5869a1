import type { Infra } from '../../infra/index.js';
import type { SocketListen } from '../../config/mail-settings.js';
import { startMapServer } from './map-server.js';
import { PostfixMaps } from './postfix-maps.js';
import { RoutingGuard } from './routing.guard.js';

export type { AddressUse, RoutingChecks, RoutingGuard } from './routing.guard.js';
export type { MapServer } from './map-server.js';
export type { PostfixMapName } from './postfix-maps.js';

/**
 * The address space of mailboxes and aliases, as Postfix resolves it: one
 * guard for every change to it, and the lookup tables Postfix asks.
 */
export function createRoutingModule(infra: Pick<Infra, 'db' | 'log'>) {
  const maps = new PostfixMaps(infra.db);
  return {
    guard: new RoutingGuard(infra.db),
    startMapServer: (listen: SocketListen, opts: { maxConnections?: number } = {}) => startMapServer(listen, maps, infra.log, opts),
  };
}
export type RoutingModule = ReturnType<typeof createRoutingModule>;
