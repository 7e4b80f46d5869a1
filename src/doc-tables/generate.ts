import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { collectCatalog } from './collect.js';
import { renderSections, replaceSections } from './render.js';

/**
 * README.md and docs/audit.md as they should be: their generated sections
 * rendered from the routes and commands of the module list. `npm run
 * docs:generate` writes them; src/doc-tables/generate.test.ts fails when the
 * committed copies differ.
 */
export async function renderDocs(root: string): Promise<Map<string, { before: string; after: string }>> {
  const sections = renderSections(await collectCatalog(root));
  const out = new Map<string, { before: string; after: string }>();
  for (const [file, parts] of Object.entries(sections)) {
    const before = readFileSync(join(root, file), 'utf8');
    out.set(file, { before, after: replaceSections(file, before, parts) });
  }
  return out;
}
