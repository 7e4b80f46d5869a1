import type { Infra } from '../../infra/index.js';
import { RoutingGuard } from './routing.guard.js';

export type { AddressUse, RoutingChecks, RoutingGuard } from './routing.guard.js';

/** The address space of mailboxes and aliases, as Postfix resolves it: one guard for every change to it. */
export function createRoutingModule(infra: Pick<Infra, 'db'>) {
  return { guard: new RoutingGuard(infra.db) };
}
export type RoutingModule = ReturnType<typeof createRoutingModule>;
