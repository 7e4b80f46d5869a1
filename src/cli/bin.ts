#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { recordFailure } from './audit-hook.js';
import { commandOf, parseCommandIndex } from './command-index.js';
import type { CommandIndex } from './command-index.js';
import { buildProgram } from './program.js';
import { fail } from './output.js';

/** The index the build wrote next to the bundle; null where there is none (tsc's output, the tests' sources): all is built. */
function commandIndex(): CommandIndex | null {
  try {
    return parseCommandIndex(readFileSync(new URL('./command-index.json', import.meta.url), 'utf8'));
  } catch {
    return null;
  }
}

const index = commandIndex();
const command = index ? commandOf(process.argv.slice(2), index) : undefined;
buildProgram(index && command !== undefined ? { only: { index, command } } : {})
  .then((program) => program.parseAsync(process.argv))
  .catch(async (err: unknown) => {
    await recordFailure(err);
    fail(err);
  });
