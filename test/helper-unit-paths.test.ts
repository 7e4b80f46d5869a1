import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACTIONS, dovecotConfD } from '../src/helper/actions.js';
import { loadHelperSettings } from '../src/config/helper-settings.js';
import { limitsPaths } from '../src/adapters/limits-config/daemon-state.js';
import { renderJailPlan } from '../src/adapters/limits-config/jail-plan.js';
import { LIMITS } from '../src/shared/limit-keys.js';
import { REPO_ROOT } from './helpers/cli.js';

const UNIT = join(REPO_ROOT, 'deploy/systemd/mailsvc-helper.service');

/** The sandbox of a unit as systemd reads the directives this test relies on. */
type Sandbox = { protectSystem: string | undefined; privateTmp: boolean; readWrite: string[] };

function sandbox(text: string): Sandbox {
  const values = (key: string): string[] =>
    text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.startsWith(`${key}=`))
      .map((l) => l.slice(key.length + 1).trim());
  return {
    protectSystem: values('ProtectSystem').at(-1),
    privateTmp: values('PrivateTmp').at(-1) === 'yes',
    // Each line adds its space-separated paths ("-": ignored when missing, "+": outside RootDirectory); an empty value resets the list.
    readWrite: [
      ...values('ReadWritePaths').reduce<string[]>((acc, v) => (v === '' ? [] : [...acc, ...v.split(/\s+/).map((p) => normalize(p.replace(/^[-+]+/, '')))]), []),
      // ConfigurationDirectory= (relative to /etc) is made at start and writable under ProtectSystem=strict.
      ...values('ConfigurationDirectory').flatMap((v) => v.split(/\s+/).filter(Boolean).map((p) => normalize(join('/etc', p)))),
    ],
  };
}

/** Under ProtectSystem=strict, a path is writable when it is in a ReadWritePaths entry, or in /tmp with PrivateTmp=yes. */
function writable(sb: Sandbox, path: string): boolean {
  if (sb.protectSystem !== 'strict') throw new Error('the helper unit must keep ProtectSystem=strict');
  const p = normalize(path);
  const inside = (root: string) => p === root || p.startsWith(`${root}/`);
  if (sb.privateTmp && (inside('/tmp') || inside('/var/tmp'))) return true;
  return sb.readWrite.some(inside);
}

/** What each helper action writes with the settings it has when mailsvc.conf sets none (the defaults). */
function writtenByActions(): Map<string, string[]> {
  const cfg = loadHelperSettings({});
  return new Map([...ACTIONS].map(([name, spec]) => [name, [...spec.writes(cfg)]]));
}

function unwritable(unitText: string): string[] {
  const sb = sandbox(unitText);
  return [...writtenByActions()].flatMap(([name, paths]) => paths.filter((p) => !writable(sb, p)).map((p) => `${name}: ${p}`));
}

describe('mailsvc-helper.service lets the helper write exactly what its actions write', () => {
  const unit = readFileSync(UNIT, 'utf8');

  it('every directory an action writes (from the action table and the default settings) is writable under the unit', () => {
    const all = writtenByActions();
    // Every action is accounted for, and names absolute paths.
    expect(all.size).toBe(ACTIONS.size);
    for (const [name, paths] of all) for (const p of paths) expect(isAbsolute(p), `${name}: ${p}`).toBe(true);
    expect(unwritable(unit)).toEqual([]);
  });

  it('no ReadWritePaths entry is more than some action needs', () => {
    const wanted = new Set([...writtenByActions().values()].flat().map((p) => normalize(p)));
    const extra = sandbox(unit).readWrite.filter((entry) => !wanted.has(entry));
    expect(extra).toEqual([]);
  });

  it('the check is not a rubber stamp: without a directory, or without ProtectSystem=strict, it says so', () => {
    expect(unwritable(unit.replace('=-/etc/postfix ', '=')).sort()).toEqual(['apply-limits: /etc/postfix', 'tls-deploy: /etc/postfix', 'tls-rollback: /etc/postfix']);
    expect(unwritable(unit.replace('-/etc/dovecot/conf.d ', '').replace(' -/etc/fail2ban/jail.d', '')).sort()).toEqual(['apply-limits: /etc/dovecot/conf.d', 'apply-limits: /etc/fail2ban/jail.d', 'tls-deploy: /etc/dovecot/conf.d', 'tls-rollback: /etc/dovecot/conf.d']);
    expect(unwritable(unit.replace('ConfigurationDirectory=mailsvc/tls', 'ConfigurationDirectory=')).sort()).toEqual(['tls-deploy: /etc/mailsvc/tls', 'tls-rollback: /etc/mailsvc/tls']);
    expect(unwritable(unit.replace('PrivateTmp=yes', 'PrivateTmp=no')).sort()).toEqual(['apply-limits', 'dkim-signing-apply', 'firewall-apply', 'tls-deploy', 'tls-rollback'].map((a) => `${a}: ${tmpdir()}`));
    expect(() => unwritable(unit.replace('ProtectSystem=strict', 'ProtectSystem=full'))).toThrow(/ProtectSystem=strict/);
  });

  it("apply-limits' declared directories are the ones its renderer writes into (same defaults as the applier)", () => {
    const cfg = loadHelperSettings({});
    const paths = limitsPaths(cfg);
    const declared = ACTIONS.get('apply-limits')?.writes(cfg) ?? [];
    const values = Object.fromEntries(LIMITS.map((l) => [l.key, l.default]));
    const jailFiles = renderJailPlan(values, { settings: cfg.jails, authLog: cfg.authLog, fail2banDir: paths.fail2banDir }).map((f) => dirname(f.path));
    const files = [join(paths.postfixDir, 'main.cf'), join(paths.rspamdLocalDir, 'options.inc'), join(dirname(paths.dovecotConfig), 'conf.d', '99-mailsvc-limits.conf'), ...jailFiles.map((d) => join(d, 'x.local'))];
    for (const f of files) expect(declared, f).toContain(dirname(f));
    expect(dovecotConfD(cfg)).toBe('/etc/dovecot/conf.d');
  });
});
