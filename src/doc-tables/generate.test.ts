import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../test/helpers/cli.js';
import { renderDocs } from './generate.js';
import { replaceSections } from './render.js';

describe('the generated tables of README.md and docs/audit.md', () => {
  it('the committed copies are what the routes and commands make (else: npm run docs:generate)', async () => {
    const docs = await renderDocs(REPO_ROOT);
    expect([...docs.keys()].sort()).toEqual(['README.md', 'docs/audit.md']);
    for (const [file, { before, after }] of docs) expect(before, `${file} is stale: run npm run docs:generate and commit it`).toBe(after);
  }, 120_000);

  it('a section is replaced between its markers only; a missing marker is an error naming the section', () => {
    const text = 'before\n<!-- BEGIN GENERATED: t (npm run docs:generate) -->\nold\n<!-- END GENERATED: t -->\nafter\n';
    expect(replaceSections('x.md', text, { t: 'new' })).toBe('before\n<!-- BEGIN GENERATED: t (npm run docs:generate) -->\nnew\n<!-- END GENERATED: t -->\nafter\n');
    expect(() => replaceSections('x.md', text, { other: 'new' })).toThrow('x.md: the markers of the generated section "other" are missing');
  });
});
