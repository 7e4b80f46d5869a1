import type { Db } from '../../db/database.js';

/**
 * The lookup tables Postfix asks mailsvc over the socketmap protocol: the same
 * answers deploy/postfix/<db>/*.cf give when Postfix reads the database itself.
 * One table per name; the key is what Postfix looks up (an address, `@domain`
 * for a catch-all, a domain).
 */
export const POSTFIX_MAPS = ['domains', 'mailboxes', 'alias-mailboxes', 'aliases', 'sender-logins'] as const;
export type PostfixMapName = (typeof POSTFIX_MAPS)[number];

export const isPostfixMap = (name: string): name is PostfixMapName => (POSTFIX_MAPS as readonly string[]).includes(name);

/** Postfix joins the rows of an SQL table's answer with commas; so do we. */
const joined = (rows: readonly string[]): string | null => (rows.length === 0 ? null : rows.join(','));

/**
 * Reads the domains, accounts and aliases tables the way Postfix resolves an
 * address (the routing module is the one that reads the address space as a
 * whole). Each lookup is one indexed query.
 */
export class PostfixMaps {
  constructor(private readonly db: Db) {}

  /** The table's answer for `key`, or null when it has none. */
  async lookup(name: PostfixMapName, key: string): Promise<string | null> {
    const db = this.db;
    switch (name) {
      case 'domains': {
        const r = await db.selectFrom('domains').select('name').where('name', '=', key).where('active', '=', 1).executeTakeFirst();
        return r?.name ?? null;
      }
      case 'mailboxes': {
        const r = await db.selectFrom('accounts as a').innerJoin('domains as d', 'd.id', 'a.domain_id').select('a.address').where('a.address', '=', key).where('a.active', '=', 1).where('d.active', '=', 1).executeTakeFirst();
        return r?.address ?? null;
      }
      case 'alias-mailboxes': {
        // Every mailbox maps to itself, so that it wins over its domain's catch-all (also while disabled: its mail is then refused, not caught).
        const r = await db.selectFrom('accounts as a').innerJoin('domains as d', 'd.id', 'a.domain_id').select('a.address').where('a.address', '=', key).where('d.active', '=', 1).executeTakeFirst();
        return r?.address ?? null;
      }
      case 'aliases': {
        const rows = await db.selectFrom('aliases as al').innerJoin('domains as d', 'd.id', 'al.domain_id').select('al.destination').where('al.source', '=', key).where('al.active', '=', 1).where('d.active', '=', 1).execute();
        return joined(rows.map((r) => r.destination));
      }
      case 'sender-logins': {
        const [own, aliases] = await Promise.all([
          db.selectFrom('accounts as a').innerJoin('domains as d', 'd.id', 'a.domain_id').select('a.address').where('a.address', '=', key).where('a.active', '=', 1).where('d.active', '=', 1).execute(),
          db.selectFrom('aliases as al').innerJoin('domains as d', 'd.id', 'al.domain_id').select('al.destination').where('al.source', '=', key).where('al.active', '=', 1).where('d.active', '=', 1).execute(),
        ]);
        return joined([...own.map((r) => r.address), ...aliases.map((r) => r.destination)]);
      }
    }
  }
}
