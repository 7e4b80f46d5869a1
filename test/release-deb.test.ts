/**
 * Issue 34, items 1–3: the staged release carries the web panel, its own
 * Node.js 24 (bin/mailsvc runs on it whatever node is first on PATH, and its
 * better-sqlite3 opens a database there), and `npm run release` makes a
 * Debian package of it: its control fields, its files (root's, nothing in
 * /opt), its maintainer scripts, and no lintian error.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/cli.js';
import { buildDebPackage, stageRelease } from './helpers/releases.js';
import { skipNotice } from './helpers/services.js';
import { BACKUP_DIR } from '../src/modules/install/ownership-plan.js';

const has = (cmd: string, args: string[]): boolean => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
const noDpkg = has('dpkg-deb', ['--version']) ? null : 'dpkg-deb missing (apt-get install dpkg)';
if (noDpkg) skipNotice('dpkg-deb', noDpkg);
const noLintian = has('lintian', ['--version']) ? null : 'lintian missing (apt-get install lintian)';
if (noLintian) skipNotice('lintian', noLintian);

const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

describe.skipIf(noDpkg !== null)('the release: panel, its own Node.js 24, the Debian package', () => {
  let tmp: string;
  let staged: string;
  let deb: string;
  let extracted: string;
  const field = (name: string): string => execFileSync('dpkg-deb', ['-f', deb, name]).toString().trim();

  beforeAll(() => {
    tmp = mkdtempSync('/var/tmp/mailsvc-deb-test-');
    const key = join(tmp, 'signing.pem');
    writeFileSync(key, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    staged = stageRelease(join(tmp, `mailsvc-${VERSION}`), VERSION, key);
    deb = buildDebPackage(staged, join(tmp, 'out'));
    extracted = join(tmp, 'control');
    execFileSync('dpkg-deb', ['-e', deb, extracted]);
  }, 30 * 60_000);
  afterAll(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('the staged release holds the built panel (dist/panel/index.html), not a link to the checkout', () => {
    expect(existsSync(join(staged, 'dist', 'panel', 'index.html'))).toBe(true);
    expect(readFileSync(join(staged, 'dist', 'panel', 'index.html'), 'utf8')).toContain('<html');
  });

  it('bin/mailsvc runs on the release\'s Node.js 24 with the machine\'s node first on PATH, and better-sqlite3 opens a database there', () => {
    const env = { ...process.env, PATH: `${join(process.execPath, '..')}:/usr/bin:/bin` };
    const r = spawnSync(join(staged, 'bin', 'mailsvc'), ['--version', '--json'], { env, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const v = JSON.parse(r.stdout) as { version: string; node: string; runtime: string; node_path: string };
    expect(v).toMatchObject({ version: VERSION, runtime: 'bundled', node_path: join(staged, 'runtime', 'bin', 'node') });
    expect(v.node).toMatch(/^v24\./);
    // The fixture is real: the node first on PATH is another binary (on CI it is Node 24 too, from elsewhere).
    expect(realpathSync(process.execPath)).not.toBe(realpathSync(join(staged, 'runtime', 'bin', 'node')));
    // Through a link to the launcher (as /usr/local/bin/mailsvc is), the same.
    const link = join(tmp, 'mailsvc-link');
    execFileSync('ln', ['-sfn', join(staged, 'bin', 'mailsvc'), link]);
    expect((JSON.parse(execFileSync(link, ['--version', '--json'], { env }).toString()) as { node: string }).node).toBe(v.node);

    const data = join(tmp, 'data');
    mkdirSync(data, { recursive: true });
    const migrate = spawnSync(link, ['db', 'migrate', '--json'], { env: { ...env, MAILSVC_DATA_DIR: data, MAILSVC_CONFIG_FILE: join(data, 'mailsvc.conf') }, encoding: 'utf8' });
    expect(migrate.status, migrate.stderr).toBe(0);
    expect((JSON.parse(migrate.stdout) as { applied: string[] }).applied.length).toBeGreaterThan(0);
    expect(existsSync(join(data, 'mailsvc.db'))).toBe(true);
  });

  it('the control file: name, Debian version, amd64, what it depends on, recommends and suggests', () => {
    expect(deb.endsWith(`mailsvc_${VERSION.replace('-', '~')}-1_amd64.deb`)).toBe(true);
    expect(field('Package')).toBe('mailsvc');
    expect(field('Version')).toBe(`${VERSION.replace('-', '~')}-1`);
    expect(field('Architecture')).toBe('amd64');
    const list = (f: string): string[] => field(f).split(',').map((d) => d.trim().split(' ')[0] ?? '');
    expect(list('Depends')).toEqual(expect.arrayContaining(['systemd', 'passwd', 'ca-certificates', 'libc6', 'libstdc++6']));
    expect(list('Depends')).not.toContain('nodejs');
    expect(list('Recommends')).toEqual(
      expect.arrayContaining(['postfix', 'postfix-sqlite', 'dovecot-imapd', 'dovecot-lmtpd', 'dovecot-sieve', 'dovecot-auth-lua', 'dovecot-sqlite', 'lua-socket', 'rspamd', 'nginx', 'fail2ban', 'python3-systemd', 'nftables', 'postsrsd', 'ssl-cert']),
    );
    expect(list('Suggests')).toEqual(['redis-server', 'rclone']);
  });

  it('the files: the release in /usr/lib/mailsvc (runtime, launcher, bundle, panel), the docs lintian wants, all root\'s, nothing in /opt', () => {
    const rows = execFileSync('dpkg-deb', ['-c', deb], { maxBuffer: 64 * 1024 * 1024 }).toString().trim().split('\n');
    const paths = rows.map((r) => r.split(/\s+/).slice(5).join(' ').split(' -> ')[0] ?? '');
    for (const p of ['./usr/lib/mailsvc/bin/mailsvc', './usr/lib/mailsvc/runtime/bin/node', './usr/lib/mailsvc/dist/bundle/mailsvc.js', './usr/lib/mailsvc/dist/panel/index.html', './usr/lib/mailsvc/package.json', './usr/lib/mailsvc/deploy/systemd/mailsvc.service', './usr/lib/mailsvc/node_modules/better-sqlite3/build/Release/better_sqlite3.node', './usr/share/doc/mailsvc/copyright', './usr/share/doc/mailsvc/changelog.Debian.gz']) {
      expect(paths, p).toContain(p);
    }
    expect(paths.filter((p) => p.startsWith('./opt') || p.startsWith('./usr/local'))).toEqual([]);
    expect(rows.filter((r) => r.split(/\s+/)[1] !== 'root/root')).toEqual([]);
    // The launcher and the runtime are executable.
    expect(rows.find((r) => r.endsWith(' ./usr/lib/mailsvc/bin/mailsvc'))).toMatch(/^-rwxr-xr-x/);
    expect(rows.find((r) => r.endsWith(' ./usr/lib/mailsvc/runtime/bin/node'))).toMatch(/^-rwxr-xr-x/);
  });

  it('the maintainer scripts: postinst runs mailsvc install, prerm stops the units, postrm purge says what it keeps and how to remove it', () => {
    const postinst = readFileSync(join(extracted, 'postinst'), 'utf8');
    expect(postinst).toContain('/usr/lib/mailsvc/bin/mailsvc install');
    expect(spawnSync('sh', ['-n', join(extracted, 'postinst')]).status).toBe(0);
    // A daemon apt has not configured yet is left alone, and wired when the package's own trigger runs the postinst again.
    expect(postinst).toMatch(/--no-wire \$d/);
    expect(postinst).toContain('dpkg-trigger --no-await mailsvc-wire');
    expect(postinst).toMatch(/configure\|triggered\)/);
    expect(readFileSync(join(extracted, 'triggers'), 'utf8')).toBe('interest-noawait mailsvc-wire\n');
    expect(readFileSync(join(extracted, 'prerm'), 'utf8')).toMatch(/systemctl stop mailsvc\.service/);
    expect(readFileSync(join(extracted, 'postrm'), 'utf8')).toContain('/opt/mailsvc/current/bin/mailsvc uninstall');
    // Run as dpkg runs it on purge: it only prints.
    const purge = spawnSync('sh', [join(extracted, 'postrm'), 'purge'], { encoding: 'utf8' });
    expect(purge.status).toBe(0);
    for (const kept of ['/var/lib/mailsvc', '/etc/mailsvc', BACKUP_DIR, '/var/log/mailsvc', 'the user and group mailsvc']) expect(purge.stdout, kept).toContain(kept);
    expect(purge.stdout).toContain(`rm -rf /var/lib/mailsvc /etc/mailsvc ${BACKUP_DIR} /var/log/mailsvc && userdel mailsvc`);
  });

  it.skipIf(noLintian !== null)('lintian reports no error', () => {
    const r = spawnSync('lintian', ['--no-tag-display-limit', deb], { encoding: 'utf8', timeout: 20 * 60_000, maxBuffer: 16 * 1024 * 1024 });
    const errors = r.stdout.split('\n').filter((l) => l.startsWith('E:'));
    expect(errors, r.stdout + r.stderr).toEqual([]);
    // The fixture is real: lintian looked at the package (it names it on every line it prints).
    expect(r.status === 0 || r.stdout.includes('mailsvc')).toBe(true);
  }, 25 * 60_000);
});
