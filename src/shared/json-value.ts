/** A plain JSON object (not null, not an array). */
export const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `raw` parsed as JSON, or an Error carrying `message` (the value itself is never quoted). */
export function parseJsonOr(raw: string, message: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    throw new Error(message);
  }
}
