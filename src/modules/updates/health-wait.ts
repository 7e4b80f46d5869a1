import { AppError } from '../../shared/errors.js';

/**
 * How the updater asks the restarted service whether it is healthy: a
 * short-lived read-only API key (made before the snapshot, so a rollback
 * keeps it; revoked at the end) and the service's address.
 */
export type HealthProbe = {
  baseUrl: string;
  open(): Promise<{ id: string; key: string }>;
  close(key: { id: string; key: string }): Promise<void>;
};

type Details = { status?: string; version?: string; degraded_by?: unknown };

/** A daemon down on the host (a component) says nothing about the new release: it does not fail the update's health check. */
const healthy = (b: Details) => b.status === 'ok' || (Array.isArray(b.degraded_by) && b.degraded_by.length > 0 && b.degraded_by.every((r) => typeof r === 'string' && r.startsWith('component ')));

/** Polls /health/details until it answers status ok (or degraded by components only) with `version`, or the time is up. */
export async function waitForHealth(probe: HealthProbe, key: { key: string }, version: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer yet';
  while (Date.now() < deadline) {
    if (signal.aborted) throw new AppError('conflict', 'interrupted while waiting for the service');
    try {
      const res = await fetch(`${probe.baseUrl}/health/details`, { headers: { authorization: `Bearer ${key.key}` }, signal: AbortSignal.timeout(5000) });
      const body = (await res.json().catch(() => ({}))) as Details;
      if (res.status === 200 && healthy(body) && body.version === version) return;
      last = `HTTP ${res.status}, status ${body.status ?? '?'}, version ${body.version ?? '?'}`;
    } catch (err) {
      last = (err as { cause?: { code?: string } }).cause?.code ?? (err instanceof Error ? err.message : String(err));
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new AppError('upstream', `the service did not answer /health/details with status ok and version ${version} within ${Math.round(timeoutMs / 1000)} s (last: ${last})`);
}
