import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { machineConfigMissing, skipNotice } from '../../../test/helpers/services.js';
import { applyConfig } from './apply.js';
import { fail2banChecker, nftablesChecker, postfixChecker, rspamdChecker, systemdChecker } from './checkers.js';
import type { RunFn } from './checkers.js';
import { run } from '../exec.js';
import { LocalFileHost } from './local-file-host.js';
import type { ApplyUnit, DaemonReloader, RenderedFile } from './types.js';

/** The real checkers of the Debian daemons judge broken files; the applier must leave the old ones untouched. */
function has(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore', timeout: 30_000 });
    return true;
  } catch {
    return false;
  }
}
const tools = {
  postfix: has('postconf', ['-d', 'mail_version']),
  fail2ban: has('fail2ban-client', ['--version']),
  nft: has('nft', ['--version']),
  rspamd: has('rspamadm', ['--version']),
  systemd: has('systemd-analyze', ['--version']),
};
for (const [tool, ok] of Object.entries(tools)) if (!ok) skipNotice(`${tool} (Debian package)`, 'not installed');
// Two groups copy the machine's own configuration: installed is not enough, it must be there.
const unconfigured = {
  postfix: tools.postfix ? machineConfigMissing(['/etc/postfix/master.cf']) : null,
  rspamd: tools.rspamd ? machineConfigMissing(['/etc/rspamd/rspamd.conf']) : null,
};
for (const [daemon, why] of Object.entries(unconfigured)) if (why !== null) skipNotice(`the machine's ${daemon} configuration`, why);

const host = new LocalFileHost();
let dir: string;
let reloads: string[];
const reloader: DaemonReloader = { reload: async (d) => void reloads.push(d) };
const failing = (daemon: string): DaemonReloader => ({
  reload: async (d) => {
    reloads.push(d);
    // Only the first reload fails; the one after the restore succeeds.
    if (d === daemon && reloads.filter((r) => r === d).length === 1) throw new Error(`${d}: reload refused`);
  },
});

/** Every file under a directory with its bytes and mode: "byte for byte, mode too". */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[p.slice(root.length)] = `${(statSync(p).mode & 0o7777).toString(8)}:${readFileSync(p).toString('base64')}`;
    }
  };
  walk(root);
  return out;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mailsvc-apply-'));
  reloads = [];
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!tools.postfix || unconfigured.postfix !== null)('postfix main.cf through postfix check', () => {
  let pf: string;
  const GOOD = 'compatibility_level = 3.6\nmessage_size_limit = 52428800\n';
  beforeEach(() => {
    pf = join(dir, 'postfix');
    cpSync('/etc/postfix', pf, { recursive: true, filter: (s) => !s.endsWith('/sasl') });
    writeFileSync(join(pf, 'main.cf'), 'compatibility_level = 3.6\n');
    chmodSync(join(pf, 'main.cf'), 0o644);
  });
  const unit = (files: RenderedFile[]): ApplyUnit => ({ daemon: 'postfix', files, checker: postfixChecker(pf), reload: true });

  it("postfix check gets a staged copy with no symlink leaving it (Debian's makedefs.out): postfix-script would log a warning for it on every check", async () => {
    if (!lstatSync(join(pf, 'makedefs.out'), { throwIfNoEntry: false })?.isSymbolicLink()) symlinkSync('/usr/share/postfix/makedefs.out', join(pf, 'makedefs.out'));
    const leaving: string[] = [];
    let checked = '';
    const exec: RunFn = async (file, args, opts) => {
      // What postfix-script looks for ("symlink leaves directory"), in the copy as postfix check sees it.
      checked = args[1] ?? '';
      for (const f of readdirSync(checked, { recursive: true, encoding: 'utf8' })) {
        const p = join(checked, f);
        if (lstatSync(p).isSymbolicLink() && readlinkSync(p).includes('/')) leaving.push(f);
      }
      return run(file, args, opts);
    };
    const outcome = await postfixChecker(pf, exec).check([{ path: join(pf, 'main.cf'), content: Buffer.from('compatibility_level = 3.6\n') }]);
    expect(outcome).toEqual({ ok: true });
    expect(checked).not.toBe('');
    expect(leaving).toEqual([]);
    // The copy has the file's text; the live directory keeps its symlink.
    expect(lstatSync(join(pf, 'makedefs.out')).isSymbolicLink()).toBe(true);
  });

  it('a broken main.cf (message_size_limit = notanumber) is refused: old files back byte for byte, new file absent, nothing reloaded', async () => {
    const before = snapshot(pf);
    const r = await applyConfig(
      [unit([{ path: join(pf, 'main.cf'), content: 'compatibility_level = 3.6\nmessage_size_limit = notanumber\n', mode: 0o640 }, { path: join(pf, 'extra.cf'), content: 'x = 1\n', mode: 0o644 }])],
      host,
      reloader,
    );
    expect(r).toMatchObject({ ok: false, stage: 'check', daemon: 'postfix', reloadedAfterRestore: [], restoreErrors: [] });
    expect(snapshot(pf)).toEqual(before);
    expect(reloads).toEqual([]);
  });

  it('a good change is applied and reported; the same change again is a no-op without a reload', async () => {
    const r = await applyConfig([unit([{ path: join(pf, 'main.cf'), content: GOOD, mode: 0o640 }, { path: join(pf, 'master.cf'), content: readFileSync(join(pf, 'master.cf')), mode: statSync(join(pf, 'master.cf')).mode }])], host, reloader);
    expect(r).toEqual({ ok: true, changed: [join(pf, 'main.cf')], created: [], unchanged: [join(pf, 'master.cf')], reloaded: ['postfix'] });
    expect(readFileSync(join(pf, 'main.cf'), 'utf8')).toBe(GOOD);
    expect(statSync(join(pf, 'main.cf')).mode & 0o7777).toBe(0o640);
    expect(readdirSync(pf).filter((n) => n.includes('.mailsvc-'))).toEqual([]);
    const again = await applyConfig([unit([{ path: join(pf, 'main.cf'), content: GOOD, mode: 0o640 }])], host, reloader);
    expect(again).toEqual({ ok: true, changed: [], created: [], unchanged: [join(pf, 'main.cf')], reloaded: [] });
    expect(reloads).toEqual(['postfix']);
  });

  it('a mode-only change counts as a change', async () => {
    const r = await applyConfig([unit([{ path: join(pf, 'main.cf'), content: 'compatibility_level = 3.6\n', mode: 0o600 }])], host, reloader);
    expect(r).toMatchObject({ ok: true, changed: [join(pf, 'main.cf')] });
    expect(statSync(join(pf, 'main.cf')).mode & 0o7777).toBe(0o600);
  });

  it('a failing reload restores every file (a created one removed) and reloads again', async () => {
    const before = snapshot(pf);
    const r = await applyConfig([unit([{ path: join(pf, 'main.cf'), content: GOOD, mode: 0o600 }, { path: join(pf, 'new.cf'), content: 'y = 2\n', mode: 0o644 }])], host, failing('postfix'));
    expect(r).toMatchObject({ ok: false, stage: 'reload', daemon: 'postfix', reloadedAfterRestore: ['postfix'], restoreErrors: [] });
    expect(r.ok ? [] : r.restored.sort()).toEqual([join(pf, 'main.cf'), join(pf, 'new.cf')].sort());
    expect(snapshot(pf)).toEqual(before);
    expect(reloads).toEqual(['postfix', 'postfix']);
  });
});

describe.skipIf(!tools.fail2ban)('a fail2ban jail through fail2ban-client -t', () => {
  let f2b: string;
  let jail: string;
  const jailText = (filter: string) => `[mailsvc-auth]\nenabled = true\nfilter = ${filter}\nlogpath = ${join(dir, 'auth.log')}\nbackend = auto\nmaxretry = 5\n`;
  beforeEach(() => {
    f2b = join(dir, 'fail2ban');
    cpSync('/etc/fail2ban', f2b, { recursive: true });
    // Debian's defaults enable sshd, whose log does not exist here: start from no jails.
    for (const n of readdirSync(join(f2b, 'jail.d'))) rmSync(join(f2b, 'jail.d', n));
    copyFileSync(new URL('../../../deploy/fail2ban/filter.d/mailsvc-auth.conf', import.meta.url), join(f2b, 'filter.d/mailsvc-auth.conf'));
    writeFileSync(join(dir, 'auth.log'), '');
    jail = join(f2b, 'jail.d/mailsvc-auth.local');
    writeFileSync(jail, jailText('mailsvc-auth'));
  });

  it('a jail naming a filter that does not exist is refused, the old jail is back, nothing reloaded', async () => {
    const before = snapshot(f2b);
    const r = await applyConfig([{ daemon: 'fail2ban', files: [{ path: jail, content: jailText('mailsvc-authh'), mode: 0o644 }], checker: fail2banChecker(f2b), reload: true }], host, reloader);
    expect(r).toMatchObject({ ok: false, stage: 'check', daemon: 'fail2ban' });
    expect(r.ok ? '' : r.detail).toMatch(/fail2ban-client exited/);
    expect(snapshot(f2b)).toEqual(before);
    expect(reloads).toEqual([]);
  });

  it('a good jail change is applied', async () => {
    const text = jailText('mailsvc-auth').replace('maxretry = 5', 'maxretry = 3');
    const r = await applyConfig([{ daemon: 'fail2ban', files: [{ path: jail, content: text, mode: 0o644 }], checker: fail2banChecker(f2b), reload: true }], host, reloader);
    expect(r).toMatchObject({ ok: true, changed: [jail], reloaded: ['fail2ban'] });
    expect(readFileSync(jail, 'utf8')).toBe(text);
  });
});

describe.skipIf(!tools.nft)('an nftables ruleset through nft -c -f', () => {
  const ruleset = (port: string) => `table inet mailsvc_check {\n  chain input {\n    type filter hook input priority 0; policy accept;\n    tcp dport ${port} accept\n  }\n}\n`;

  it('an invalid ruleset is refused, and a refusal of one daemon keeps a good file of another daemon out too', async () => {
    const nftFile = join(dir, 'mailsvc.nft');
    const other = join(dir, 'other.conf');
    writeFileSync(nftFile, ruleset('22'));
    const before = snapshot(dir);
    const r = await applyConfig(
      [
        { daemon: 'other', files: [{ path: other, content: 'fine\n', mode: 0o644 }], checker: { name: 'always fine', check: async () => ({ ok: true }) }, reload: true },
        { daemon: 'nftables', files: [{ path: nftFile, content: ruleset('99999'), mode: 0o600 }], checker: nftablesChecker(), reload: true },
      ],
      host,
      reloader,
    );
    expect(r).toMatchObject({ ok: false, stage: 'check', daemon: 'nftables' });
    expect(r.ok ? '' : r.detail).toMatch(/out of range/);
    expect(snapshot(dir)).toEqual(before);
    expect(reloads).toEqual([]);
  });

  it('without root the check runs in a new user and network namespace (unshare -rn) and still tells good from bad', async () => {
    const checker = nftablesChecker(undefined, false);
    const path = join(dir, 'mailsvc.nft');
    expect(await checker.check([{ path, content: Buffer.from(ruleset('25')) }])).toEqual({ ok: true });
    expect(await checker.check([{ path, content: Buffer.from(ruleset('99999')) }])).toMatchObject({ ok: false, detail: expect.stringMatching(/unshare exited 1: .*out of range/) });
  });

  it('a valid ruleset is applied (checked only, never loaded into the host)', async () => {
    const nftFile = join(dir, 'mailsvc.nft');
    const r = await applyConfig([{ daemon: 'nftables', files: [{ path: nftFile, content: ruleset('25'), mode: 0o600 }], checker: nftablesChecker(), reload: false }], host, reloader);
    expect(r).toEqual({ ok: true, changed: [], created: [nftFile], unchanged: [], reloaded: [] });
    expect(execFileSync('nft', ['list', 'tables'], { encoding: 'utf8' })).not.toContain('mailsvc_check');
  });
});

describe('a file that cannot be written', () => {
  it('stops before any check or rename: the other temp files are removed, nothing reloaded', async () => {
    writeFileSync(join(dir, 'a.conf'), 'old\n');
    const before = snapshot(dir);
    let checked = false;
    const r = await applyConfig(
      [{ daemon: 'd', files: [{ path: join(dir, 'a.conf'), content: 'new\n', mode: 0o644 }, { path: join(dir, 'missing-dir/b.conf'), content: 'b\n', mode: 0o644 }], checker: { name: 'c', check: async () => ((checked = true), { ok: true }) }, reload: true }],
      host,
      reloader,
    );
    expect(r).toMatchObject({ ok: false, stage: 'write', daemon: 'd', restored: [] });
    expect(r.ok ? '' : r.detail).toContain('missing-dir/b.conf');
    expect(checked).toBe(false);
    expect(snapshot(dir)).toEqual(before);
    expect(reloads).toEqual([]);
  });
});

describe.skipIf(!tools.rspamd || unconfigured.rspamd !== null)('rspamd local.d through rspamadm configtest', () => {
  it('refuses broken UCL and accepts good UCL', async () => {
    const conf = join(dir, 'rspamd');
    cpSync('/etc/rspamd', conf, { recursive: true });
    const file = join(conf, 'local.d/greylist.conf');
    const checker = rspamdChecker(conf);
    expect(await checker.check([{ path: file, content: Buffer.from('enabled = true;;; {{\n') }])).toMatchObject({ ok: false, detail: expect.stringMatching(/greylist\.conf/) });
    expect(await checker.check([{ path: file, content: Buffer.from('enabled = true;\n') }])).toEqual({ ok: true });
  });
});

describe.skipIf(!tools.systemd)('a systemd unit through systemd-analyze verify', () => {
  it('refuses a unit whose ExecStart does not exist and accepts a good one', async () => {
    const path = join(dir, 'mailsvc-x.service');
    const checker = systemdChecker();
    const unit = (exec: string) => Buffer.from(`[Unit]\nDescription=x\n[Service]\nExecStart=${exec}\n`);
    expect(await checker.check([{ path, content: unit('/nonexistent/bin') }])).toMatchObject({ ok: false });
    expect(await checker.check([{ path, content: unit('/bin/true') }])).toEqual({ ok: true });
  });
});
