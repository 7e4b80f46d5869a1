#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { recordFailure } from './audit-hook.js';
import { commandOf, parseCommandIndex } from './command-index.js';
import type { CommandIndex } from './command-index.js';
import { buildProgram } from './program.js';
import { fail } from './output.js';
import { versionReport } from './version-report.js';

/** The index the build wrote next to the bundle; null where there is none (tsc's output, the tests' sources): all is built. */
function commandIndex(): CommandIndex | null {
  try {
    return parseCommandIndex(readFileSync(new URL('./command-index.json', import.meta.url), 'utf8'));
  } catch {
    return null;
  }
}

// `mailsvc --version --json`: the version and the Node.js it runs on (the release's own runtime, or the host's).
const report = versionReport(process.argv.slice(2));
if (report) {
  process.stdout.write(`${JSON.stringify(report)}\n`);
  process.exit(0);
}

const index = commandIndex();
const command = index ? commandOf(process.argv.slice(2), index) : undefined;
buildProgram(index && command !== undefined ? { only: { index, command } } : {})
  .then((program) => program.parseAsync(process.argv))
  .catch(async (err: unknown) => {
    await recordFailure(err);
    fail(err);
  });
