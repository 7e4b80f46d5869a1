import { describe, expect, it } from 'vitest';
import { DoveadmKicker } from './doveadm.js';

// The real doveadm kick against a running Dovecot is in test/mail-login.test.ts.
describe('DoveadmKicker argument handling', () => {
  it('passes a command prefix (sudo -n …), the config and the user as separate arguments, no shell', async () => {
    const r = await new DoveadmKicker({ binary: '/bin/echo -n sudo-prefix', config: '/etc/x y.conf' }).kick('a@example.org; rm -rf /');
    expect(r).toEqual({ kicked: true, detail: 'sudo-prefix -c /etc/x y.conf kick a@example.org; rm -rf /' });
  });

  it('reports a program that cannot run as a failure, not an exception', async () => {
    const r = await new DoveadmKicker({ binary: '/nonexistent/doveadm' }).kick('a@example.org');
    expect(r.failed).toBe(true);
    expect(r.detail).toMatch(/could not run/);
  });
});
