import { describe, expect, it } from 'vitest';
import { inUnitCgroup } from './peer-identity.js';

describe('inUnitCgroup: is a process in the service unit’s cgroup (/proc/<pid>/cgroup)', () => {
  it('matches the unit as the last component of a cgroup path, v2 or v1, and nothing that only resembles it', () => {
    expect(inUnitCgroup('0::/system.slice/mailsvc.service\n', 'mailsvc.service')).toBe(true);
    expect(inUnitCgroup('1:name=systemd:/system.slice/mailsvc.service\n0::/\n', 'mailsvc.service')).toBe(true);
    expect(inUnitCgroup('0::/system.slice/mailsvc-update@x.service\n', 'mailsvc.service')).toBe(false);
    expect(inUnitCgroup('0::/user.slice/user-999.slice/session-3.scope\n', 'mailsvc.service')).toBe(false);
    expect(inUnitCgroup('0::/system.slice/xmailsvc.service\n', 'mailsvc.service')).toBe(false);
    expect(inUnitCgroup('', 'mailsvc.service')).toBe(false);
  });
});
