import type { Ask } from './types.js';
import { txtValues } from './types.js';

const MECHANISM = /^[+\-~?]?(all|include:\S+|a(:[^/\s]+)?(\/\d{1,3}){0,2}|mx(:[^/\s]+)?(\/\d{1,3}){0,2}|ptr(:\S+)?|ip4:[0-9.]+(\/\d{1,2})?|ip6:[0-9a-fA-F:.]+(\/\d{1,3})?|exists:\S+)$/i;
const MODIFIER = /^[a-z][a-z0-9_.-]*=\S*$/i;
/** Terms that cost a DNS lookup (RFC 7208 §4.6.4): at most 10 in all, includes and redirects followed. */
const LOOKUP_TERM = /^[+\-~?]?(include:|a\b|a:|mx\b|mx:|ptr\b|ptr:|exists:)|^redirect=/i;

export type SpfSyntax = { ok: true; terms: string[] } | { ok: false; detail: string };

export function parseSpf(record: string): SpfSyntax {
  const parts = record.trim().split(/\s+/);
  if (parts[0]?.toLowerCase() !== 'v=spf1') return { ok: false, detail: 'does not start with v=spf1' };
  const terms = parts.slice(1);
  const bad = terms.find((t) => !MECHANISM.test(t) && !MODIFIER.test(t));
  if (bad !== undefined) return { ok: false, detail: `unknown term "${bad}"` };
  const redirects = terms.filter((t) => /^redirect=/i.test(t)).length;
  if (redirects > 1) return { ok: false, detail: 'more than one redirect=' };
  return { ok: true, terms };
}

/**
 * The DNS lookups an SPF evaluation would make, following include: and
 * redirect= (each target's TXT asked through `ask`, once per run). Stops at 11
 * (over the limit is over the limit); a target that cannot be read is reported.
 */
export async function countLookups(terms: readonly string[], ask: Ask, seen = new Set<string>()): Promise<{ count: number; problems: string[] }> {
  let count = 0;
  const problems: string[] = [];
  for (const t of terms) {
    if (!LOOKUP_TERM.test(t)) continue;
    count += 1;
    const target = /^[+\-~?]?include:(.+)$/i.exec(t)?.[1] ?? /^redirect=(.+)$/i.exec(t)?.[1];
    if (target === undefined || count > 10) continue;
    if (seen.has(target)) {
      problems.push(`${target} is included twice (a loop?)`);
      continue;
    }
    seen.add(target);
    const a = await ask(target, 'TXT');
    if (a.kind !== 'records') {
      problems.push(a.kind === 'none' ? `${target} has no SPF record` : `cannot read ${target}: ${a.detail}`);
      continue;
    }
    const spf = txtValues(a.records).filter((v) => /^v=spf1(\s|$)/i.test(v));
    const parsed = spf.length === 1 && spf[0] !== undefined ? parseSpf(spf[0]) : null;
    if (!parsed?.ok) {
      problems.push(`${target}: ${spf.length === 1 ? 'bad SPF record' : `${spf.length} SPF records`}`);
      continue;
    }
    const inner = await countLookups(parsed.terms, ask, seen);
    count += inner.count;
    problems.push(...inner.problems);
  }
  return { count, problems };
}
