const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/** A span such as 30m, 24h, 7d, 2w in milliseconds, or null when the text is not one. */
export function parseSpan(text: string): number | null {
  const span = /^(\d{1,6})([mhdw])$/.exec(text.trim());
  return span ? Number(span[1]) * UNIT_MS[span[2] as keyof typeof UNIT_MS] : null;
}
