/**
 * `mailsvc install` run from a release (the .deb's postinst, or an unpacked archive) decides where `current`
 * points: at this release when there is none yet or this one is newer; kept when it is the same or newer (an
 * older package never downgrades), and the report says which. The command link names the release's launcher.
 */
import { mkdirSync, mkdtempSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../../test/helpers/cli.js';
import { install } from './installer.js';
import { readSwitches } from './unit-plan.js';

describe('install switches current to a newer release, never to an older one', () => {
  const dir = mkdtempSync('/var/tmp/mailsvc-current-switch-');
  const root = join(dir, 'root');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A release directory of `version` (what install copies into releases/). */
  const release = (version: string): string => {
    const p = join(dir, `pkg-${version}`);
    mkdirSync(join(p, 'bin'), { recursive: true });
    writeFileSync(join(p, 'package.json'), JSON.stringify({ name: 'mailsvc', version }));
    writeFileSync(join(p, 'bin', 'mailsvc'), '#!/bin/sh\n', { mode: 0o755 });
    return p;
  };
  const run = (version: string) =>
    install({
      root,
      switches: readSwitches({}, '/opt/mailsvc'),
      packageRoot: release(version),
      layout: 'installed',
      version,
      templateDir: join(REPO_ROOT, 'deploy', 'systemd'),
      migrate: () => Promise.resolve('not with --root'),
      serviceUser: 'nobody',
    });
  const current = (): string => readlinkSync(join(root, 'opt/mailsvc/current'));

  it('first install: current → this release; the command link → current/bin/mailsvc', async () => {
    const r = await run('1.0.0');
    expect(current()).toBe('releases/1.0.0');
    expect(readlinkSync(join(root, 'usr/local/bin/mailsvc'))).toBe('/opt/mailsvc/current/bin/mailsvc');
    expect(r.done.join('\n')).toContain('/usr/local/bin/mailsvc → /opt/mailsvc/current/bin/mailsvc');
  });

  it('a newer release switches current and says from where', async () => {
    const r = await run('1.1.0');
    expect(current()).toBe('releases/1.1.0');
    expect(r.done.join('\n')).toContain('current → releases/1.1.0 (was releases/1.0.0: 1.1.0 is newer)');
  });

  it('an older one keeps current and says nothing was downgraded; the same one keeps it quietly', async () => {
    const older = await run('1.0.0');
    expect(current()).toBe('releases/1.1.0');
    expect(older.done.join('\n')).toContain('current kept (→ releases/1.1.0): 1.1.0 is newer than this release 1.0.0, nothing was downgraded');
    const pre = await run('1.1.0-rc.1');
    expect(current()).toBe('releases/1.1.0');
    expect(pre.done.join('\n')).toContain('nothing was downgraded');
    const same = await run('1.1.0');
    expect(current()).toBe('releases/1.1.0');
    expect(same.done.join('\n')).not.toContain('downgraded');
  });
});
