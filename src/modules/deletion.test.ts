import { describe, expect, it } from 'vitest';
import type { Db } from '../db/database.js';
import { AppError } from '../shared/errors.js';
import { beginDeletion } from './deletion.js';
import type { DeletionListener } from './module-types.js';

type Gone = { id: number };
const tx = {} as Db;

/** A listener that writes what it does into `log` under its name. */
function listener(name: string, log: string[], fail: { before?: boolean; undo?: boolean } = {}): DeletionListener<Gone> {
  return {
    before: async (e) => {
      if (fail.before) throw new AppError('conflict', `${name} refuses ${e.id}`);
      log.push(`${name} before ${e.id}`);
    },
    within: async (t, e) => void log.push(`${name} within ${e.id} ${t === tx ? 'in tx' : 'outside'}`),
    undo: async (e) => {
      if (fail.undo) throw new AppError('upstream', `${name} could not put ${e.id} back`);
      log.push(`${name} undo ${e.id}`);
    },
  };
}

describe('a deletion event, as an owner emits it', () => {
  it('builds the listeners, runs every before, then within in the transaction it is given', async () => {
    const log: string[] = [];
    const deletion = await beginDeletion({ listeners: async () => [listener('a', log), listener('b', log)] }, { id: 7 });
    await deletion.within(tx);
    expect(log).toEqual(['a before 7', 'b before 7', 'a within 7 in tx', 'b within 7 in tx']);
  });

  it('a listener that refuses in before stops the delete: the earlier ones are undone, its error is thrown', async () => {
    const log: string[] = [];
    await expect(beginDeletion({ listeners: async () => [listener('a', log), listener('b', log, { before: true })] }, { id: 7 })).rejects.toThrow('b refuses 7');
    expect(log).toEqual(['a before 7', 'a undo 7']);
  });

  it('undo runs newest first and returns what could not be put back, to be added to the error', async () => {
    const log: string[] = [];
    const deletion = await beginDeletion({ listeners: async () => [listener('a', log, { undo: true }), listener('b', log)] }, { id: 7 });
    expect(await deletion.undo()).toBe('; a could not put 7 back');
    expect(log).toEqual(['a before 7', 'b before 7', 'b undo 7']);
  });

  it('no event source or no listener: nothing to do, nothing to undo', async () => {
    const deletion = await beginDeletion(undefined, { id: 1 });
    await deletion.within(tx);
    expect(await deletion.undo()).toBe('');
  });
});
