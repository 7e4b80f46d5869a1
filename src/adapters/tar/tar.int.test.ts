import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createArchive, extractArchive, gzipProgram } from './index.js';
import { skipNotice } from '../../../test/helpers/services.js';

const has = (p: string): boolean => {
  try {
    execFileSync('sh', ['-c', `command -v ${p}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
const pigz = has('pigz');
if (!pigz) skipNotice('pigz (Debian package)', 'not installed: the parallel gzip path is not tested');

describe('gzip archives: pigz when installed, gzip otherwise, each reading the other', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-tar-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('picks pigz only from a PATH that holds an executable pigz', () => {
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    expect(gzipProgram(`/nonexistent:${bin}`)).toBe('gzip');
    writeFileSync(join(bin, 'pigz'), '#!/bin/sh\n');
    expect(gzipProgram(`/nonexistent:${bin}`)).toBe('gzip');
    chmodSync(join(bin, 'pigz'), 0o755);
    expect(gzipProgram(`/nonexistent:${bin}`)).toBe('pigz');
  });

  it.skipIf(!pigz)('an archive written by the backup (pigz) reads back with gzip, and one written by gzip with the restore', async () => {
    const src = join(dir, 'src');
    mkdirSync(join(src, 'cur'), { recursive: true });
    for (let i = 0; i < 50; i++) writeFileSync(join(src, 'cur', `m${i}`), `Subject: ${i}\r\n\r\n${'x'.repeat(i * 97)}\r\n`);
    expect(gzipProgram()).toBe('pigz');
    const ours = join(dir, 'ours.tar.gz');
    await createArchive({ dir: src, file: ours, snapshot: join(dir, 'ours.snar'), compression: 'gzip' });
    // gzip itself lists what pigz wrote (and checks its CRC while reading).
    const listed = execFileSync('sh', ['-c', `gzip -dc '${ours}' | tar -tf -`], { encoding: 'utf8' });
    expect(listed.split('\n').filter((l) => l.startsWith('./cur/m')).length).toBe(50);
    // An archive from plain gzip restores through extractArchive (pigz -d).
    const theirs = join(dir, 'theirs.tar.gz');
    execFileSync('sh', ['-c', `tar -cf - -C '${src}' . | gzip -1 > '${theirs}'`]);
    const out = join(dir, 'out');
    mkdirSync(out);
    await extractArchive({ file: theirs, dir: out, compression: 'gzip' });
    for (const i of [0, 7, 49]) expect(readFileSync(join(out, 'cur', `m${i}`), 'utf8')).toBe(readFileSync(join(src, 'cur', `m${i}`), 'utf8'));
  });

  it('a file written to while tar reads it is reported (a live mailbox), and the archive still completes', async () => {
    const live = join(dir, 'live');
    mkdirSync(join(live, 'cur'), { recursive: true });
    const big = join(live, 'cur', 'growing');
    writeFileSync(big, Buffer.alloc(64 << 20, 'a'));
    writeFileSync(join(live, 'cur', 'still'), 'unchanged\n');
    // Another process appends without pause for as long as tar runs.
    const writer = spawn('sh', ['-c', `while :; do echo x >> '${big}'; done`], { stdio: 'ignore' });
    try {
      // Wait until the writer really appends (on a busy machine `sh` may take a while to start).
      await vi.waitFor(() => expect(statSync(big).size).toBeGreaterThan(64 << 20), { timeout: 30_000, interval: 20 });
      const r = await createArchive({ dir: live, file: join(dir, 'live.tar.gz'), snapshot: join(dir, 'live.snar'), compression: 'gzip' });
      expect(r.changedWhileRead).toEqual([expect.stringMatching(/growing: file changed as we read it/)]);
      expect(r.files).toBe(2);
    } finally {
      writer.kill('SIGKILL');
    }
  });

  it.each(['gzip', 'none'] as const)('%s: tar exiting at the end-of-archive blocks, before the rest of the stream arrives, is a whole extraction; a truncated archive fails', async (compression) => {
    const src = join(dir, `small-${compression}`);
    mkdirSync(join(src, 'cur'), { recursive: true });
    for (let i = 0; i < 14; i++) writeFileSync(join(src, 'cur', `m${i}`), `Subject: ${i}\r\n\r\n${'hello '.repeat(50 * i)}\r\n`);
    // tar stops reading at the end-of-archive blocks; 4 MiB of zeros after them make sure it exits before the
    // stream ends (with pigz the last record's padding alone came late in one extraction in eight: "Premature close").
    const plain = join(dir, `small-${compression}.tar`);
    execFileSync('sh', ['-c', `{ tar -cf - -C '${src}' . ; head -c 4194304 /dev/zero; } > '${plain}'`]);
    const file = compression === 'gzip' ? `${plain}.gz` : plain;
    if (compression === 'gzip') execFileSync('sh', ['-c', `gzip -1 -k '${plain}'`]);
    const sha256 = execFileSync('sha256sum', [file], { encoding: 'utf8' }).split(' ')[0];
    for (let i = 0; i < 3; i++) {
      const out = join(dir, `small-${compression}-out-${i}`);
      mkdirSync(out);
      // The whole file is still read: its sha256 is the one the manifest holds.
      expect((await extractArchive({ file, dir: out, compression })).sha256).toBe(sha256);
      expect(readFileSync(join(out, 'cur', 'm13'), 'utf8')).toBe(readFileSync(join(src, 'cur', 'm13'), 'utf8'));
    }
    const bytes = readFileSync(file);
    if (compression === 'gzip') {
      // Cut after the end-of-archive blocks (2000 bytes of gzip hold the whole tar and some of the zeros): every file
      // is whole, tar ends well and the decompressor, cut off by tar, is not heard; the sha256 of what was read is not
      // the manifest's, and that is what makes a restore refuse such an archive.
      writeFileSync(file, bytes.subarray(0, 2000));
      const cut = join(dir, `small-${compression}-cut-after-end`);
      mkdirSync(cut);
      expect((await extractArchive({ file, dir: cut, compression })).sha256).not.toBe(sha256);
    }
    // Cut inside the files (before the end-of-archive blocks): 500 bytes of gzip are 19 KB of a 40 KB tar.
    writeFileSync(file, bytes.subarray(0, compression === 'gzip' ? 500 : 6000));
    const out = join(dir, `small-${compression}-truncated`);
    mkdirSync(out);
    await expect(extractArchive({ file, dir: out, compression })).rejects.toThrow(/tar exited 2/);
  });
});
