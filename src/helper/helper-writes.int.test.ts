import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHelperSettings } from '../config/helper-settings.js';
import type { HelperSettings } from '../config/helper-settings.js';
import { prepareRspamd, rspamdUnavailable } from '../../test/helpers/rspamd.js';
import { skipNotice } from '../../test/helpers/services.js';
import { ACTIONS } from './actions.js';
import { HelperRunner } from './runner.js';

const hasRspamdGroup = spawnSync('getent', ['group', '_rspamd']).status === 0;
const why = rspamdUnavailable() ?? (hasRspamdGroup ? null : 'no group _rspamd (Debian package rspamd)');
if (why) skipNotice('rspamd, rspamadm (root)', why);

type Entry = { kind: 'file' | 'dir'; stamp: string };

/** Every file and directory under `root`, each with what changes when it is written (a directory's own mtime is left out: its files say it). */
function snapshot(root: string): Map<string, Entry> {
  const out = new Map<string, Entry>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = lstatSync(p);
      if (st.isDirectory()) {
        out.set(p, { kind: 'dir', stamp: `${st.ino}:${st.mode}:${st.uid}:${st.gid}` });
        walk(p);
      } else out.set(p, { kind: 'file', stamp: `${st.ino}:${st.size}:${st.mtimeMs}:${st.mode}:${st.uid}:${st.gid}` });
    }
  };
  walk(root);
  return out;
}

/** The paths created, removed or changed between two snapshots. */
function changed(before: Map<string, Entry>, after: Map<string, Entry>): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  return [...keys].filter((k) => before.get(k)?.stamp !== after.get(k)?.stamp).sort();
}

/**
 * The `writes` each action declares (which the helper's systemd unit must
 * allow, test/helper-unit-paths.test.ts) are what it really writes: the real
 * actions run on a copy of Debian's Rspamd configuration and a postsrsd
 * settings file, and every file or directory they create, replace, chmod or
 * remove lies in a directory they declared.
 */
describe.skipIf(why !== null)('helper actions write only where they declare (real actions, rspamadm configtest)', { timeout: 300_000 }, () => {
  let dir: string;
  let cfg: HelperSettings;
  let runner: HelperRunner;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-helper-writes-'));
    const prepared = await prepareRspamd(dir, '127.0.0.1:9');
    mkdirSync(join(dir, 'default'));
    writeFileSync(join(dir, 'default', 'postsrsd'), 'SRS_DOMAIN=example.test\n');
    // The service manager postsrsd is restarted with (systemctl's stand-in): it only succeeds.
    writeFileSync(join(dir, 'manager'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    cfg = loadHelperSettings({
      MAILSVC_HELPER: 'direct',
      MAILSVC_RSPAMD_LOCAL_DIR: prepared.localDir,
      MAILSVC_RSPAMD_GROUP: '_rspamd',
      MAILSVC_POSTSRSD_DEFAULTS: join(dir, 'default', 'postsrsd'),
      MAILSVC_SERVICE_MANAGER: join(dir, 'manager'),
    });
    runner = new HelperRunner(cfg, pino({ level: 'silent' }));
  }, 300_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const der = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64');
  const steps: [string, string[]][] = [
    ['dkim-key-install', ['example.test', '202611', 'rsa', der]],
    ['dkim-signing-apply', [JSON.stringify([{ domain: 'example.test', selectors: [{ selector: '202611' }] }])]],
    ['dkim-signing-apply', ['[]']],
    ['dkim-key-remove', ['example.test', '202611']],
    ['srs-domains-apply', ['example.test,other.test']],
  ];

  it.each(steps)('%s writes only inside the directories it declares', async (action, args) => {
    const before = snapshot(dir);
    const outcome = await runner.answer(action, args);
    expect(outcome, JSON.stringify(outcome)).toMatchObject({ ok: true });
    if (outcome.ok) expect(JSON.parse(outcome.stdout)).not.toMatchObject({ ok: false });
    const paths = changed(before, snapshot(dir));
    // Each step really wrote something: the check below is not vacuous.
    expect(paths.length).toBeGreaterThan(0);
    const declared = ACTIONS.get(action)?.writes(cfg) ?? [];
    const inside = (p: string) => declared.some((d) => dirname(p) === d || dirname(p).startsWith(`${d}/`));
    expect(paths.filter((p) => !inside(p)), `declared: ${declared.join(', ')}`).toEqual([]);
  });
});
