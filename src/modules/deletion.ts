import type { Db } from '../db/database.js';
import { AppError } from '../shared/errors.js';
import type { DeletionListener, EventSource } from './module-types.js';

/** One delete under way: every listener's `before` has run. */
export type Deletion = {
  /** Inside the owner's transaction: every listener's `within`. */
  within(tx: Db): Promise<void>;
  /** The delete failed: every `undo`, newest first; what could not be put back, as `; …` to add to the error (empty when all was). */
  undo(): Promise<string>;
};

const text = (e: unknown): string => (e instanceof AppError ? e.detail : e instanceof Error ? e.message : String(e));

/**
 * How an owner emits a deletion event (`domain.deleting`, `account.deleting`):
 * the listeners are built first (never inside the transaction: SQLite has one
 * connection), then each `before` runs; a refusal undoes the ones before it and
 * is thrown. The owner runs `within` in its transaction and `undo` when the
 * delete fails.
 */
export async function beginDeletion<E>(source: EventSource<E> | undefined, event: E): Promise<Deletion> {
  const listeners: DeletionListener<E>[] = source ? await source.listeners() : [];
  const done: DeletionListener<E>[] = [];
  const undo = async (): Promise<string> => {
    const notes: string[] = [];
    for (const l of [...done].reverse()) await l.undo?.(event).catch((err: unknown) => notes.push(`; ${text(err)}`));
    return notes.join('');
  };
  for (const l of listeners) {
    try {
      await l.before?.(event);
    } catch (err) {
      await undo();
      throw err;
    }
    done.push(l);
  }
  return {
    within: async (tx) => {
      for (const l of listeners) await l.within(tx, event);
    },
    undo,
  };
}
