import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyConfig } from './apply.js';
import { LocalFileHost } from './local-file-host.js';
import type { ApplyUnit, ConfigChecker } from './types.js';

/** The apply step's failure paths, on real files; the checkers here are doubles (apply.int.test.ts runs the real ones). */
const pass: ConfigChecker = { name: 'pass', check: async () => ({ ok: true }) };
let dir: string;
let reloads: string[];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mailsvc-apply-unit-'));
  reloads = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const files = () => Object.fromEntries(readdirSync(dir).sort().map((n) => [n, `${(statSync(join(dir, n)).mode & 0o777).toString(8)}:${readFileSync(join(dir, n), 'utf8')}`]));

describe('applyConfig failure paths', () => {
  it('a rename that fails half-way puts the files already moved back and removes the rest', async () => {
    writeFileSync(join(dir, 'a.conf'), 'old a\n', { mode: 0o640 });
    writeFileSync(join(dir, 'b.conf'), 'old b\n', { mode: 0o644 });
    const before = files();
    class FailingSecondRename extends LocalFileHost {
      override async rename(from: string, to: string): Promise<void> {
        if (to.endsWith('b.conf') && from.includes('.mailsvc-')) throw new Error('EIO: simulated');
        return super.rename(from, to);
      }
    }
    const unit: ApplyUnit = { daemon: 'd', files: [{ path: join(dir, 'a.conf'), content: 'new a\n', mode: 0o600 }, { path: join(dir, 'b.conf'), content: 'new b\n', mode: 0o600 }], checker: pass, reload: true };
    const r = await applyConfig([unit], new FailingSecondRename(), { reload: async (d) => void reloads.push(d) });
    expect(r).toMatchObject({ ok: false, stage: 'write', restored: [join(dir, 'a.conf')], restoreErrors: [] });
    expect(files()).toEqual(before);
    expect(reloads).toEqual([]);
  });

  it('a second daemon failing its reload: every file restored, both daemons reloaded again', async () => {
    writeFileSync(join(dir, 'one.conf'), '1\n');
    const before = files();
    let failed = false;
    const r = await applyConfig(
      [
        { daemon: 'one', files: [{ path: join(dir, 'one.conf'), content: '1 new\n', mode: 0o644 }], checker: pass, reload: true },
        { daemon: 'two', files: [{ path: join(dir, 'two.conf'), content: '2\n', mode: 0o644 }], checker: pass, reload: true },
      ],
      new LocalFileHost(),
      {
        reload: async (d) => {
          reloads.push(d);
          if (d === 'two' && !failed) {
            failed = true;
            throw new Error('two refused');
          }
        },
      },
    );
    expect(r).toMatchObject({ ok: false, stage: 'reload', daemon: 'two', detail: 'reload of two failed: two refused', reloadedAfterRestore: ['one', 'two'] });
    expect(files()).toEqual(before);
    expect(reloads).toEqual(['one', 'two', 'one', 'two']);
  });

  it('a checker that throws counts as a refusal; a daemon with reload: false is not reloaded', async () => {
    const boom: ConfigChecker = { name: 'boom', check: async () => Promise.reject(new Error('checker crashed')) };
    const r = await applyConfig([{ daemon: 'd', files: [{ path: join(dir, 'x'), content: 'x', mode: 0o644 }], checker: boom, reload: true }], new LocalFileHost(), { reload: async (d) => void reloads.push(d) });
    expect(r).toMatchObject({ ok: false, stage: 'check', detail: 'boom refused the new configuration: checker crashed' });
    expect(files()).toEqual({});
    const ok = await applyConfig([{ daemon: 'd', files: [{ path: join(dir, 'x'), content: 'x', mode: 0o644 }], checker: pass, reload: false }], new LocalFileHost(), { reload: async (d) => void reloads.push(d) });
    expect(ok).toEqual({ ok: true, changed: [], created: [join(dir, 'x')], unchanged: [], reloaded: [] });
    expect(reloads).toEqual([]);
  });

  it('refuses a relative path or a file rendered twice before touching anything', async () => {
    const h = new LocalFileHost();
    const rl = { reload: async () => undefined };
    await expect(applyConfig([{ daemon: 'd', files: [{ path: 'rel.conf', content: '', mode: 0o644 }], checker: pass, reload: true }], h, rl)).rejects.toThrow(/absolute/);
    const f = { path: join(dir, 'x'), content: '', mode: 0o644 };
    await expect(applyConfig([{ daemon: 'd', files: [f, f], checker: pass, reload: true }], h, rl)).rejects.toThrow(/twice/);
    expect(files()).toEqual({});
  });
});
