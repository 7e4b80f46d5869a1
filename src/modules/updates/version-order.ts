/**
 * Semantic-version order (semver.org §11), for the versions mailsvc publishes:
 * `MAJOR.MINOR.PATCH`, an optional `-pre.release` and ignored `+build`.
 * Written here rather than taken from the `semver` package: these twenty
 * lines are all the updater needs, and a runtime dependency for them would
 * be one more package in every release archive.
 */
const PATTERN = /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z.-]+)?$/;

export type Version = { core: [number, number, number]; pre: string[] };

export function parseVersion(text: string): Version | null {
  const m = PATTERN.exec(text.trim());
  if (!m) return null;
  return { core: [Number(m[1]), Number(m[2]), Number(m[3])], pre: m[4] ? m[4].split('.') : [] };
}

function comparePre(a: string[], b: string[]): number {
  // A version without a pre-release is newer than the same one with it.
  if (a.length === 0 || b.length === 0) return b.length - a.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === undefined || y === undefined) return x === undefined ? -1 : 1;
    if (x === y) continue;
    const nx = /^\d+$/.test(x);
    const ny = /^\d+$/.test(y);
    if (nx && ny) return Number(x) - Number(y) < 0 ? -1 : 1;
    if (nx !== ny) return nx ? -1 : 1; // numeric identifiers sort before alphanumeric ones
    return x < y ? -1 : 1;
  }
  return 0;
}

/** <0, 0, >0 as `a` is older than, equal to, newer than `b`. Throws on a version that does not parse. */
export function compareVersions(a: string, b: string): number {
  const va = parseVersion(a);
  const vb = parseVersion(b);
  if (!va || !vb) throw new Error(`not a semantic version: ${!va ? a : b}`);
  for (let i = 0; i < 3; i++) {
    const d = (va.core[i] ?? 0) - (vb.core[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return comparePre(va.pre, vb.pre);
}
