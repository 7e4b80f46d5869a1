import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BACKUP_COMPRESSIONS, BACKUP_DB_MODES, BACKUP_STORAGE_TYPES, BACKUP_TYPES, BACKUP_WEEKDAYS } from '../src/config/backup-settings.js';
import { SettingsError } from '../src/config/settings-error.js';
import { loadSettings } from '../src/config/settings.js';
import { retentionPlan } from '../src/modules/backups/chain.js';
import { REMOTE_BACKENDS, RemoteRefused, remoteEnvFor } from '../src/modules/backups/remote-policy.js';
import { STORED_KEYS, withStored } from '../src/modules/backups/stored-settings.js';
import type { StoredKey } from '../src/modules/backups/stored-settings.js';
import { REPO_ROOT } from './helpers/cli.js';

/** The inventory of docs/security.md, "What root reads": one row per input. */
type Row = { unit: string; input: string; writer: string; check: string; probe: string };
function inventory(): Row[] {
  const doc = readFileSync(join(REPO_ROOT, 'docs/security.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## What root reads'), doc.indexOf('\n## ', doc.indexOf('## What root reads') + 5));
  return section
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| Root unit') && !l.startsWith('|---'))
    .map((l) => l.slice(2, -2).split(' | '))
    .map(([unit = '', input = '', writer = '', check = '', probe = '']) => ({ unit, input, writer, check, probe }));
}

/** Hostile text: commands, paths, option names and flags, rclone's connection strings, control characters, huge and negative numbers. */
const WORDS = ['$(touch /tmp/x)', '`id`', ';id', '|sh', '/etc/shadow', '../../etc', '--config=/tmp/x', '-vv', ':local:/etc', 'pwn,bearer_token_command=/tmp/x:', 'x\nExecStartPre=/bin/sh', '\u0000', '\r', 'mailsvccrypt:x', 'local:/', 'a:..', 'a:-x', 'a:b c', '-1', '0', '99999999999999999999', '1e309', 'NaN', '1.5', ' 7', 'bearer_token_command', 'ssh', 'key_file', '__proto__', 'constructor'];
const hostile = fc.oneof(fc.constantFrom(...WORDS), fc.string({ maxLength: 40 }), fc.tuple(fc.constantFrom(...WORDS), fc.string({ maxLength: 8 }), fc.constantFrom(...WORDS)).map((p) => p.join('')));

const dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-rootinputs-'));
const settings = loadSettings({ MAILSVC_DATA_DIR: dataDir, MAILSVC_BACKUP_LOCAL_DIR: join(dataDir, 'b') });
const TARGET = /^[A-Za-z0-9_]{1,64}:[A-Za-z0-9_./@+=-]{0,255}$/;

/** Each probe: hostile values of that input are refused, or what root takes from them is a value of the allowed meaning. */
const PROBES: Record<string, () => void> = {
  'backup-settings': () =>
    fc.assert(
      fc.property(fc.constantFrom(...STORED_KEYS), hostile, fc.option(hostile), (key: StoredKey, value, other) => {
        const stored: Partial<Record<StoredKey, string>> = { [key]: value, ...(other !== null ? { STORAGE_TYPE: 'remote', REMOTE_TARGETS: other } : {}) };
        let b;
        try {
          b = withStored(settings, stored);
        } catch (err) {
          expect(err).toBeInstanceOf(SettingsError);
          return;
        }
        expect(BACKUP_TYPES).toContain(b.type);
        expect(BACKUP_WEEKDAYS).toContain(b.fullWeekday);
        expect(BACKUP_DB_MODES).toContain(b.dbMode);
        expect(BACKUP_COMPRESSIONS).toContain(b.compression);
        expect(BACKUP_STORAGE_TYPES).toContain(b.storageType);
        for (const t of b.remoteTargets) {
          expect(t).toMatch(TARGET);
          expect(t.split(':')[0]?.toLowerCase()).not.toBe('mailsvccrypt');
          expect(t.split(':')[1]?.split('/')).not.toContain('..');
        }
        // eslint-disable-next-line no-control-regex
        for (const l of b.onCalendar) expect(l).not.toMatch(/[\x00-\x1f]/);
        // What root acts on as a path never comes from the database.
        expect([b.localDir, b.manifestKeyFile, b.mailStorage]).toEqual([settings.backup.localDir, settings.backup.manifestKeyFile, settings.backup.mailStorage]);
        expect(b.configPaths).toEqual(settings.backup.configPaths);
      }),
      { seed: 33, numRuns: 2000 },
    ),
  'backup-retention': () =>
    fc.assert(
      // Whatever days the service stores (the store clamps to 1..36500; the plan is checked at its edges and beyond),
      // the newest complete chain survives and only ids of the backups given may go.
      fc.property(fc.oneof(fc.integer({ min: -1000, max: 40_000 }), fc.constantFrom(0, 1, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER)), fc.integer({ min: 1, max: 6 }), (days, n) => {
        const now = Date.parse('2026-06-01T00:00:00Z');
        const backups = Array.from({ length: n }, (_, i) => ({ id: `b${i}`, chain: i % 2 === 0 ? [`b${i}`] : [`b${i - 1}`, `b${i}`], completed_at: new Date(now - (n - i) * 3 * 86_400_000).toISOString() }));
        const plan = retentionPlan(backups, days, now);
        const newest = backups[n - 1];
        for (const id of newest?.chain ?? []) expect(plan.keep).toContain(id);
        for (const id of plan.remove) expect(backups.map((b) => b.id)).toContain(id);
      }),
      { seed: 33, numRuns: 500 },
    ),
  'backup-remote-secrets': () =>
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(REMOTE_BACKENDS), 'local', 'alias', 'crypt', 'union'), fc.oneof(fc.constantFrom('pass', 'key_pem', 'bearer_token', 'bearer_token_command', 'ssh', 'key_file', 'url', 'type', 'remote', 'config'), hostile), hostile, (type, option, value) => {
        let env: Record<string, string>;
        try {
          env = remoteEnvFor('offsite', { RCLONE_CONFIG_OFFSITE_TYPE: type }, { [option]: value });
        } catch (err) {
          expect(err).toBeInstanceOf(RemoteRefused);
          return;
        }
        const allowed = REMOTE_BACKENDS[type] ?? {};
        for (const [k, v] of Object.entries(env)) {
          expect(Object.keys(allowed).map((o) => `RCLONE_CONFIG_OFFSITE_${o.toUpperCase()}`)).toContain(k);
          // eslint-disable-next-line no-control-regex
          if (allowed[k.slice('RCLONE_CONFIG_OFFSITE_'.length).toLowerCase()] === 'secret') expect(v).not.toMatch(/[\x00-\x1f\x7f]/);
        }
      }),
      { seed: 33, numRuns: 2000 },
    ),
};

/** Probes walked by another suite of the repository (named so the table cannot point at nothing). */
const ELSEWHERE: Record<string, string> = {
  'privilege-boundary': 'test/privilege-boundary.security.test.ts',
  'backup-job-row': 'src/modules/backups/backups.routes.int.test.ts',
  'backup-replay': 'test/backup-replay.security.test.ts',
  'updates-suite': 'src/modules/updates/update-check.int.test.ts',
};

describe('root inputs: the inventory of docs/security.md, walked with hostile values', () => {
  const rows = inventory();

  it('names every input the service can write with a probe, and every probe is named', () => {
    expect(rows.length).toBeGreaterThan(5);
    for (const r of rows.filter((x) => /`mailsvc`/.test(x.writer))) expect(Object.keys({ ...PROBES, ...ELSEWHERE }), `${r.unit}: ${r.input}`).toContain(r.probe);
    for (const p of [...Object.keys(PROBES), ...Object.keys(ELSEWHERE)]) expect(rows.map((r) => r.probe), p).toContain(p);
    for (const f of Object.values(ELSEWHERE)) expect(existsSync(join(REPO_ROOT, f)), f).toBe(true);
    // Every stored backup setting is in the table.
    const inputs = rows.map((r) => r.input).join(' ');
    for (const k of STORED_KEYS) expect(inputs, k).toContain(`backup.${k}`);
  });

  for (const [name, probe] of Object.entries(PROBES)) it(`probe ${name}: hostile values are refused or only allowed values reach root`, probe);
});
