import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Builds the CLI once, before any test file runs, the way an operator builds it
 * (`npm run build`): the CLI tests then run the installed binary. Building here
 * rather than in each file keeps two workers from rewriting dist/ under each other.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  try {
    execFileSync('npm', ['run', 'build'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 180_000 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`npm run build failed:\n${e.stdout ?? ''}${e.stderr ?? e.message}`);
  }
}
