// autocannon against one URL, with every failure counted: a run that saw a
// non-2xx answer, a socket error, a timeout or a reset is invalid and throws.
import autocannon from 'autocannon';

export class InvalidRunError extends Error {}

/**
 * @param {{ title: string, url: string, headers?: Record<string, string>, connections: number, duration: number }} opts
 * @returns {Promise<{ title: string, rps: number, p50: number, p99: number, total: number, duration: number }>}
 */
export async function load(opts) {
  const result = await autocannon({
    title: opts.title,
    url: opts.url,
    method: 'GET',
    headers: opts.headers ?? {},
    connections: opts.connections,
    duration: opts.duration,
    pipelining: 1,
    timeout: 10,
  });
  const bad = {
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    resets: result.resets,
    mismatches: result.mismatches,
  };
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]));
  if (Object.values(bad).some((n) => n > 0) || result['2xx'] === 0) {
    throw new InvalidRunError(
      `${opts.title}: INVALID RUN, ${JSON.stringify(bad)}, status codes ${JSON.stringify(statusCodes)}, 2xx ${result['2xx']}`,
    );
  }
  return {
    title: opts.title,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    total: result['2xx'],
    duration: result.duration,
  };
}
