import { describe, expect, it } from 'vitest';
import { humanBytes, plural } from './human.js';
import { formatBytes } from './options.js';
import { bytes as panelBytes, plural as panelPlural } from '../../../panel/src/format.js';

// Issue 20, defect 7: sizes printed as "20K" beside "27193 B" and memory as
// "21572976K available"; "1 files". One human format, the same in the panel.
describe('the one human format for sizes and counts', () => {
  const cases: [number, string][] = [
    [0, '0 B'], [1, '1 B'], [1023, '1023 B'], [1024, '1.0 KiB'], [20_480, '20.0 KiB'], [27_193, '26.6 KiB'],
    [21_572_976 * 1024, '20.6 GiB'], [1024 ** 4 * 3, '3.0 TiB'], [1024 ** 5, '1.0 PiB'],
  ];
  it.each(cases)('%d bytes is "%s" in the CLI, in formatBytes and in the panel', (n, text) => {
    expect(humanBytes(n)).toBe(text);
    expect(formatBytes(n)).toBe(text);
    expect(panelBytes(n)).toBe(text);
  });

  it('never the old shapes: "20K", "21572976K", a bare "27193 B" above 1 KiB', () => {
    for (const n of [20_480, 21_572_976 * 1024, 27_193]) expect(formatBytes(n)).toMatch(/^\d+\.\d (KiB|MiB|GiB|TiB)$/);
  });

  it('plurals: 1 file, 2 files, 0 files; irregular ones given', () => {
    for (const f of [plural, panelPlural]) {
      expect(f(1, 'file')).toBe('1 file');
      expect(f(2, 'file')).toBe('2 files');
      expect(f(0, 'file')).toBe('0 files');
      expect(f(2, 'entry', 'entries')).toBe('2 entries');
    }
  });
});
