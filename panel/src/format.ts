/**
 * The one human format for sizes and counts, as the CLI prints them
 * (src/shared/terminal/human.ts; the panel cannot import src/): IEC units with
 * one decimal ("26.6 KiB"), bytes below 1 KiB as "512 B"; "1 file", "2 files".
 */
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

export function bytes(n: number): string {
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

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
