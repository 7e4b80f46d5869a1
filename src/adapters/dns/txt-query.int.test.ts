import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipNotice } from '../../../test/helpers/services.js';
import { knotUnavailable, startKnot } from '../../../test/helpers/knot.js';
import type { Knot } from '../../../test/helpers/knot.js';
import { queryTxt } from './txt-query.js';

/** TXT values and their published TTL from a real authoritative server (knot): UDP, and TCP when the answer is truncated. */
const why = knotUnavailable();
if (why) skipNotice('knot', why);

describe.skipIf(why !== null)('queryTxt against knot', () => {
  let knot: Knot;
  const long = Array.from({ length: 24 }, (_, i) => `${String(i).padStart(2, '0')}${'x'.repeat(248)}`);
  beforeAll(async () => {
    knot = await startKnot({ 'example.test': ['short 77 TXT "v=DKIM1; k=rsa; " "p=AB"', `long 300 TXT ${long.map((s) => `"${s}"`).join(' ')}`] });
  }, 60_000);
  afterAll(async () => knot?.stop());

  it('joins the strings of one record and gives its TTL as published', async () => {
    expect(await queryTxt({ host: '127.0.0.1', port: knot.port }, 'short.example.test')).toEqual({ kind: 'records', values: ['v=DKIM1; k=rsa; p=AB'], ttl: 77 });
  });

  it('a record of 6000 bytes (truncated over UDP) is read over TCP', async () => {
    expect(await queryTxt({ host: '127.0.0.1', port: knot.port }, 'long.example.test')).toEqual({ kind: 'records', values: [long.join('')], ttl: 300 });
  });

  it('a name without records is none; a server that does not answer is an error, not none', async () => {
    expect(await queryTxt({ host: '127.0.0.1', port: knot.port }, 'nothing.example.test')).toEqual({ kind: 'none' });
    const silent = await queryTxt({ host: '127.0.0.1', port: 9 }, 'short.example.test', { timeoutMs: 300, tries: 1 });
    expect(silent.kind).toBe('error');
  });
});
