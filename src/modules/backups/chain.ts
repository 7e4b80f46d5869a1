import type { Manifest } from './manifest.js';

/**
 * Which backups retention keeps. `backups` are complete ones, any order.
 * Kept: every backup younger than `retentionDays`, the whole newest complete
 * chain (even when older), and every backup a kept one needs (its chain back to
 * its full). Everything else may go.
 */
export function retentionPlan(backups: readonly Pick<Manifest, 'id' | 'chain' | 'completed_at'>[], retentionDays: number, now: number): { keep: string[]; remove: string[] } {
  const byId = new Map(backups.map((b) => [b.id, b]));
  const complete = (b: Pick<Manifest, 'chain'>): boolean => b.chain.every((id) => byId.has(id));
  const keep = new Set<string>();
  const cutoff = now - retentionDays * 86_400_000;
  const newest = [...backups].filter(complete).sort((a, b) => b.completed_at.localeCompare(a.completed_at))[0];
  const keepWithChain = (b: Pick<Manifest, 'id' | 'chain'>): void => {
    keep.add(b.id);
    for (const id of b.chain) if (byId.has(id)) keep.add(id);
  };
  if (newest) keepWithChain(newest);
  for (const b of backups) if (Date.parse(b.completed_at) >= cutoff) keepWithChain(b);
  return { keep: backups.map((b) => b.id).filter((id) => keep.has(id)), remove: backups.map((b) => b.id).filter((id) => !keep.has(id)) };
}

/** Chains for `backup list`: each full with the incrementals that build on it, newest first. */
export function groupChains<T extends Pick<Manifest, 'id' | 'chain'>>(backups: readonly T[]): { full: string; members: T[] }[] {
  const chains = new Map<string, T[]>();
  for (const b of backups) {
    const root = b.chain[0] ?? b.id;
    chains.set(root, [...(chains.get(root) ?? []), b]);
  }
  return [...chains.entries()].map(([full, members]) => ({ full, members })).sort((a, b) => b.full.localeCompare(a.full));
}
