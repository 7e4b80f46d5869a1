/**
 * `mailsvc install --dry-run` / `--no-wire`: the bundled CLI refuses what it
 * cannot do with one line naming the fix, before anything is touched.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildCli, runCli, stderrLines } from '../../../../test/helpers/cli.js';

describe('mailsvc install: --dry-run and --no-wire', () => {
  buildCli();
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-wiring-cli-'));
  const env = { MAILSVC_DATA_DIR: join(dir, 'data'), MAILSVC_CONFIG_FILE: join(dir, 'data/mailsvc.conf') };
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('--no-wire with a name install does not wire: refused, naming the daemons it does wire; nothing rendered', async () => {
    const root = join(dir, 'root1');
    const r = await runCli(['install', '--root', root, '--no-wire', 'exim'], { env });
    expect(r.code).not.toBe(0);
    expect(stderrLines(r).join('\n')).toMatch(/--no-wire exim: not a daemon mailsvc install wires \(one of postfix, dovecot, rspamd, nginx, fail2ban, postsrsd, nftables\)/);
    expect(existsSync(root)).toBe(false);
  });

  it('--dry-run with --root: refused (the preview is of this host\'s daemons); nothing rendered', async () => {
    const root = join(dir, 'root2');
    const r = await runCli(['install', '--root', root, '--dry-run', '--no-wire', 'nginx'], { env });
    expect(r.code).not.toBe(0);
    expect(stderrLines(r).join('\n')).toMatch(/--dry-run previews the wiring of this host's mail daemons: it does not go with --root/);
    expect(existsSync(root)).toBe(false);
  });

  it('--root renders mailsvc only: the report has no wiring and no daemon was looked at', async () => {
    const root = join(dir, 'root3');
    const r = await runCli(['install', '--root', root, '--json'], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).not.toHaveProperty('wiring');
  });
});
