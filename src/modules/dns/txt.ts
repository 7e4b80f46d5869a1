/**
 * A TXT value as character-strings of at most 255 bytes each (RFC 1035 §3.3:
 * one length octet per string). Cut on UTF-8 byte counts, never inside a
 * character; receivers concatenate the strings without a separator (RFC 7208
 * §3.3, RFC 6376 §3.6.2.2), so the cut may fall anywhere else.
 */
export function splitTxt(value: string, max = 255): string[] {
  const out: string[] = [];
  let current = '';
  let bytes = 0;
  for (const ch of value) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > max) {
      out.push(current);
      current = '';
      bytes = 0;
    }
    current += ch;
    bytes += n;
  }
  if (current !== '' || out.length === 0) out.push(current);
  return out;
}

/** The zone-file form: each string quoted, `"` and `\` escaped. */
export function zoneTxt(value: string): string {
  return splitTxt(value)
    .map((s) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`)
    .join(' ');
}
