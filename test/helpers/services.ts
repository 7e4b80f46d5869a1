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
