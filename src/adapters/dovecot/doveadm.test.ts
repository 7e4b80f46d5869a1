import { helperConfig } from '../../../test/helpers/helper-config.js';
import { describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { HelperRunner, DirectHelperClient } from '../../helper/runner.js';
import { SocketHelperClient } from '../../helper/socket-client.js';
import { DoveadmKicker } from './doveadm.js';

// The real doveadm kick against a running Dovecot, through the helper's socket, is in test/mail-login.test.ts.
// Here a script stands in for doveadm: it records its argv and exits with the code it is given.
function fakeDoveadm(exitCode: number): { program: string; argv: () => string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-doveadm-'));
  const program = join(dir, 'doveadm');
  writeFileSync(program, `#!/bin/sh\nprintf '%s\\n' "$@" > "${dir}/argv"\necho "kicked 1 connection" \nexit ${exitCode}\n`);
  chmodSync(program, 0o755);
  return { program, argv: () => readFileSync(join(dir, 'argv'), 'utf8').trimEnd().split('\n') };
}

const kickerWith = (doveadm: string): DoveadmKicker =>
  new DoveadmKicker(
    new DirectHelperClient(
      new HelperRunner(helperConfig({ doveadm, dovecotConfig: '/etc/x y.conf', postfixConfigDir: '/etc/postfix', fail2banSocket: '/run/f.sock', fail2banConfigDir: '/etc/fail2ban' }), pino({ level: 'silent' })),
    ),
  );

describe('DoveadmKicker through the helper', () => {
  it('runs doveadm -c <config> kick -- <normalized user> as separate arguments, and reads exit 0 as kicked', async () => {
    const fake = fakeDoveadm(0);
    expect(await kickerWith(fake.program).kick('Alice@Example.org')).toEqual({ kicked: true, detail: 'kicked 1 connection' });
    expect(fake.argv()).toEqual(['-c', '/etc/x y.conf', 'kick', '--', 'alice@example.org']);
  });

  it('reads exit 68 as nobody connected, not a failure', async () => {
    const r = await kickerWith(fakeDoveadm(68).program).kick('alice@example.org');
    expect(r).toEqual({ kicked: false, detail: 'kicked 1 connection' });
  });

  it('reports a failing doveadm, a refused user and an unreachable helper as a failure, not an exception', async () => {
    const failing = await kickerWith(fakeDoveadm(75).program).kick('alice@example.org');
    expect(failing).toMatchObject({ kicked: false, failed: true });
    expect(failing.detail).toMatch(/doveadm exited 75/);
    const refused = await kickerWith(fakeDoveadm(0).program).kick('a@example.org; rm -rf /');
    expect(refused).toMatchObject({ kicked: false, failed: true });
    expect(refused.detail).toMatch(/doveadm-kick <user>: Invalid domain name/);
    const away = await new DoveadmKicker(new SocketHelperClient('/nonexistent/helper.sock')).kick('alice@example.org');
    expect(away).toMatchObject({ kicked: false, failed: true });
    expect(away.detail).toMatch(/start mailsvc-helper\.socket/);
  });
});
