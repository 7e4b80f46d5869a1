import type { Db } from '../../db/database.js';
import { AppError } from '../../shared/errors.js';

/** What an address is in mailsvc's address space. */
export type AddressUse = 'mailbox' | 'alias' | null;

/** The checks a change to the address space makes, on data no other change can alter meanwhile. */
export type RoutingChecks = {
  /** Whether `address` is already a mailbox or the source of an alias. */
  addressUse(address: string): Promise<AddressUse>;
  /** Refuses (409, naming the loop) when `source` → `destinations` would make mail go round in a circle. */
  refuseLoop(source: string, destinations: readonly string[]): Promise<void>;
  /**
   * Call after removing the mailbox or alias at `address` in the same
   * transaction: refuses (409, naming the loop) when its mail would now reach
   * the domain's catch-all and go round in a circle.
   */
  refuseLoopWithout(address: string): Promise<void>;
};

// A chain longer than this is refused as well: Postfix gives up on it anyway.
const MAX_VISITS = 1000;

const domainOf = (address: string) => address.slice(address.lastIndexOf('@') + 1);

/**
 * Serialises every change to the address space (adding or removing mailboxes
 * and aliases) on the one `mail_routing` row, so two processes cannot both
 * find an address free, or both add half of a loop. Reads the accounts and
 * aliases tables the way Postfix resolves an address: an exact alias first,
 * then a mailbox, then the domain's catch-all. (The one module that reads
 * both tables: the address space is theirs together.)
 */
export class RoutingGuard {
  constructor(private readonly db: Db) {}

  /** Runs `change` in a transaction that holds the routing lock; `checks` read inside it. */
  change<T>(change: (tx: Db, checks: RoutingChecks) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(async (tx) => {
      await tx.updateTable('mail_routing').set((eb) => ({ version: eb('version', '+', 1) })).where('id', '=', 1).execute();
      return change(tx, { addressUse: (a) => addressUse(tx, a), refuseLoop: (s, d) => refuseLoop(tx, s, d), refuseLoopWithout: (a) => refuseLoopWithout(tx, a) });
    });
  }
}

async function addressUse(tx: Db, address: string): Promise<AddressUse> {
  if (await tx.selectFrom('accounts').select('id').where('address', '=', address).executeTakeFirst()) return 'mailbox';
  if (await tx.selectFrom('aliases').select('id').where('source', '=', address).executeTakeFirst()) return 'alias';
  return null;
}

/** Where mail for `address` goes next: an alias's destinations, nothing for a mailbox or an outside address. */
async function next(tx: Db, address: string): Promise<{ via: string; to: string[] } | null> {
  const exact = await tx.selectFrom('aliases').select('destination').where('source', '=', address).executeTakeFirst();
  if (exact) return { via: address, to: exact.destination.split(',').filter(Boolean) };
  if (address.startsWith('@')) return null;
  if (await tx.selectFrom('accounts').select('id').where('address', '=', address).executeTakeFirst()) return null;
  const catchAll = `@${domainOf(address)}`;
  const c = await tx.selectFrom('aliases').select('destination').where('source', '=', catchAll).executeTakeFirst();
  return c ? { via: catchAll, to: c.destination.split(',').filter(Boolean) } : null;
}

/** Whether the new alias `source` catches `address` (itself, or as the catch-all of an address no one else takes). */
async function reaches(tx: Db, source: string, address: string): Promise<boolean> {
  if (address === source) return true;
  if (!source.startsWith('@') || domainOf(address) !== source.slice(1)) return false;
  return (await tx.selectFrom('aliases').select('id').where('source', '=', address).executeTakeFirst()) === undefined
    && (await tx.selectFrom('accounts').select('id').where('address', '=', address).executeTakeFirst()) === undefined;
}

async function refuseLoop(tx: Db, source: string, destinations: readonly string[], start = source, what = 'Alias loop'): Promise<void> {
  const seen = new Set<string>();
  // Depth first, keeping the path for the message.
  const stack: string[][] = destinations.map((d) => [start, d]);
  while (stack.length > 0) {
    const path = stack.pop() ?? [];
    const address = path.at(-1) ?? '';
    if (await reaches(tx, source, address)) {
      throw new AppError('conflict', `${what}: ${path.join(' → ')}${address === source ? '' : ` → ${source}`}; mail would go round for ever`);
    }
    if (seen.has(address)) continue;
    seen.add(address);
    if (seen.size > MAX_VISITS) throw new AppError('conflict', `Alias chain from ${source} is longer than ${MAX_VISITS} addresses`);
    const hop = await next(tx, address);
    if (!hop) continue;
    const prefix = hop.via === address ? path : [...path.slice(0, -1), `${address} (via ${hop.via})`];
    for (const d of hop.to) stack.push([...prefix, d]);
  }
}

/** After `address` stopped being a mailbox or an alias (in this transaction): refuses when its domain's catch-all now sends its mail round in a circle. */
async function refuseLoopWithout(tx: Db, address: string): Promise<void> {
  if (address.startsWith('@')) return;
  const hop = await next(tx, address);
  if (!hop) return;
  await refuseLoop(tx, address, hop.to, `${address} (via ${hop.via})`, `Removing ${address} would make an alias loop`);
}
