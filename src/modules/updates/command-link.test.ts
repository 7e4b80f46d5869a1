import { mkdirSync, mkdtempSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { followCommandLink, InstallTree } from './install-tree.js';

/** A host installed before releases carried their runtime: after an update its command link must start the new release's launcher. */
describe('the command link follows the release current points at', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
  const host = (withLauncher: boolean): { tree: InstallTree; link: string } => {
    const root = mkdtempSync(join(tmpdir(), 'mailsvc-link-'));
    dirs.push(root);
    const rel = join(root, 'releases', '2.0.0');
    mkdirSync(join(rel, 'dist', 'bundle'), { recursive: true });
    writeFileSync(join(rel, 'dist', 'bundle', 'mailsvc.js'), '');
    if (withLauncher) {
      mkdirSync(join(rel, 'bin'));
      writeFileSync(join(rel, 'bin', 'mailsvc'), '#!/bin/sh\n', { mode: 0o755 });
    }
    const tree = new InstallTree(root);
    tree.switchTo(rel);
    const link = join(root, 'usr-local-bin-mailsvc');
    return { tree, link };
  };

  it('moves a link on current/dist/bundle/mailsvc.js to current/bin/mailsvc, and says what it was', () => {
    const { tree, link } = host(true);
    symlinkSync(join(tree.current, 'dist', 'bundle', 'mailsvc.js'), link);
    expect(followCommandLink(tree, link)).toBe(join(tree.current, 'dist', 'bundle', 'mailsvc.js'));
    expect(readlinkSync(link)).toBe(join(tree.current, 'bin', 'mailsvc'));
    // Again: nothing to do.
    expect(followCommandLink(tree, link)).toBeNull();
  });

  it('moves a launcher link back to the bundle when current holds a release without a launcher (a rollback)', () => {
    const { tree, link } = host(false);
    symlinkSync(join(tree.current, 'bin', 'mailsvc'), link);
    expect(followCommandLink(tree, link)).toBe(join(tree.current, 'bin', 'mailsvc'));
    expect(readlinkSync(link)).toBe(join(tree.current, 'dist', 'bundle', 'mailsvc.js'));
  });

  it('leaves alone a link into another installation, a file, and no link at all', () => {
    const { tree, link } = host(true);
    symlinkSync('/somewhere/else/mailsvc.js', link);
    expect(followCommandLink(tree, link)).toBeNull();
    expect(readlinkSync(link)).toBe('/somewhere/else/mailsvc.js');
    rmSync(link);
    writeFileSync(link, 'a script');
    expect(followCommandLink(tree, link)).toBeNull();
    expect(followCommandLink(tree, join(tree.root, 'absent'))).toBeNull();
  });
});
