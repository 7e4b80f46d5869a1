/**
 * The one human format for sizes and counts, in every command (the panel has
 * the same two functions in panel/src/format.ts): IEC units with one decimal
 * ("26.6 KiB", "20.6 GiB"), bytes below 1 KiB as "512 B"; a count with its
 * noun in the right number ("1 file", "2 files"). JSON output keeps raw numbers.
 */
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

export function humanBytes(n: number): string {
  if (!Number.isFinite(n)) return 'unknown';
  let v = Math.abs(n);
  let i = 0;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i += 1;
  }
  const sign = n < 0 ? '-' : '';
  return i === 0 ? `${sign}${v} B` : `${sign}${v.toFixed(1)} ${UNITS[i]}`;
}

/** "1 file", "2 files", "0 messages"; `many` for an irregular plural. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
