import { describe, expect, it } from 'vitest';
import { knotUnavailable, startKnot } from './knot.js';

describe.skipIf(knotUnavailable() !== null)('knot helper', () => {
  it('serves the zone and takes dynamic updates', async () => {
    const knot = await startKnot({ 'example.test': ['@ MX 10 mail.example.test.'] });
    try {
      expect(await knot.dig('example.test', 'MX')).toEqual(['10 mail.example.test.']);
      await knot.update('example.test', ['update add s1._domainkey.example.test. 60 TXT "abc" "def"']);
      expect(await knot.dig('s1._domainkey.example.test', 'TXT')).toEqual(['"abc" "def"']);
    } finally {
      await knot.stop();
    }
  });
});
