import { existsSync } from 'node:fs';

/**
 * Tests that need a real server call `serviceAvailable`: when the server does
 * not answer they skip with a printed notice, unless MAILSVC_TEST_REQUIRE_SERVICES=1,
 * in which case the missing server fails the run.
 */
export const requireServices = process.env.MAILSVC_TEST_REQUIRE_SERVICES === '1';

export function skipNotice(what: string, why: string): void {
  if (requireServices) throw new Error(`${what} is required (MAILSVC_TEST_REQUIRE_SERVICES=1) but unavailable: ${why}`);
  console.warn(`[skip] ${what} unavailable (${why}); its tests are skipped`);
}

/**
 * For tests that copy the machine's own configuration (a daemon's package installed
 * is not the same as configured): the first of `files` that is missing, as a reason
 * to skip, or null when all are there.
 */
export function machineConfigMissing(files: readonly string[]): string | null {
  const missing = files.find((f) => !existsSync(f));
  return missing === undefined ? null : `the package is installed but not configured here: no ${missing}`;
}
