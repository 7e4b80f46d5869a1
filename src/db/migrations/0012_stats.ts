import type { Kysely } from 'kysely';

// Traffic statistics: one row per message and mailbox (mailbox, size,
// direction, time, and an opaque key that makes collecting twice harmless),
// and where `stats collect` stopped in the Postfix log. Stands alone: it uses
// no table of an earlier migration.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('stats_messages')
    .addColumn('msg_key', 'varchar(32)', (c) => c.notNull())
    .addColumn('mailbox', 'varchar(320)', (c) => c.notNull())
    .addColumn('direction', 'varchar(8)', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('stats_messages_pk', ['msg_key', 'mailbox'])
    .execute();
  // Every query is a time range, optionally narrowed by direction or mailbox.
  await db.schema.createIndex('stats_messages_at').on('stats_messages').columns(['at']).execute();
  await db.schema.createIndex('stats_messages_direction_at').on('stats_messages').columns(['direction', 'at']).execute();
  await db.schema.createIndex('stats_messages_mailbox_at').on('stats_messages').columns(['mailbox', 'at']).execute();

  // One row (id 1): the file read last (identity and offset) and the messages
  // whose lines are not all read yet, as JSON.
  await db.schema
    .createTable('stats_collector')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('state_json', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('stats_collector').execute();
  await db.schema.dropTable('stats_messages').execute();
}
