import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { hostChanges, hostState } from './host-state.js';

/**
 * Checks, when the run ends, that no test changed the machine's own daemon
 * configuration (see host-state.ts). Builds the CLI once, before any test file runs, the way an operator builds it
 * (`npm run build`): the CLI tests then run the installed binary. Building here
 * rather than in each file keeps two workers from rewriting dist/ under each other;
 * the build's lock and its atomic renames keep two runs from doing it.
 */
export default function setup(): () => void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  try {
    // Under the build's lock, and only when the sources changed since dist/ was built: a second
    // `npm test` in the same checkout never rewrites the bundle the first one runs (scripts/build.mjs).
    execFileSync(process.execPath, ['scripts/build.mjs', '--if-changed'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 20 * 60_000 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`npm run build failed:\n${e.stdout ?? ''}${e.stderr ?? e.message}`);
  }
  // No test may change the machine's own daemon configuration: checked when the run ends.
  const before = hostState();
  return () => {
    const changes = hostChanges(before, hostState());
    if (changes.length === 0) return;
    // vitest reports an error thrown here but still exits 0: fail the run explicitly.
    process.stderr.write(`\nFAIL: the tests changed this machine's own configuration (a test must use temp copies):\n${changes.slice(0, 20).join('\n')}\n`);
    process.exitCode = 1;
  };
}
