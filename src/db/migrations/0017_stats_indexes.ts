import { MysqlAdapter } from 'kysely';
import type { Kysely } from 'kysely';

// Traffic statistics: the time-range indexes become one covering index.
// Every statistics query is a time range; `(at, direction, size)` answers the
// summary and the timeline from the index alone (no row lookups) and serves a
// direction filter as well as `(direction, at)` did. Rows arrive in time order,
// so this index is appended to; `(mailbox, at)` stays for one mailbox's figures.
// Fewer indexes also make `stats collect` cheaper on a big log.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('stats_messages_at_direction_size').on('stats_messages').columns(['at', 'direction', 'size']).execute();
  await dropIndex(db, 'stats_messages_direction_at');
  await dropIndex(db, 'stats_messages_at');
}

// MariaDB names the table of the index it drops; PostgreSQL and SQLite refuse the `on`.
function dropIndex(db: Kysely<unknown>, name: string): Promise<void> {
  const q = db.schema.dropIndex(name);
  return (db.getExecutor().adapter instanceof MysqlAdapter ? q.on('stats_messages') : q).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('stats_messages_at').on('stats_messages').columns(['at']).execute();
  await db.schema.createIndex('stats_messages_direction_at').on('stats_messages').columns(['direction', 'at']).execute();
  await dropIndex(db, 'stats_messages_at_direction_size');
}
