import { describe, expect, it } from 'vitest';
import { PeerLimits } from './peer-limits.js';

describe('PeerLimits', () => {
  const limits = (): PeerLimits => new PeerLimits({ maxConnections: 4, reserve: 2, perPid: 2, perUid: 3 });
  const user = (pid: number, uid = 1000) => ({ kind: 'user' as const, pid, uid });

  it('holds each process to perPid and each uid to perUid; a release frees the slot', () => {
    const l = limits();
    const a = [l.admit(user(1)), l.admit(user(1))];
    expect(a.every((x) => x.ok)).toBe(true);
    expect(l.admit(user(1))).toMatchObject({ ok: false, kind: 'process' });
    expect(l.admit(user(2)).ok).toBe(true);
    expect(l.admit(user(3))).toMatchObject({ ok: false, kind: 'user' });
    const first = a[0];
    if (first?.ok) first.release();
    expect(l.admit(user(1)).ok).toBe(true);
  });

  it('keeps the reserve for root and the service’s own process; unknown peers share one count', () => {
    const l = limits();
    for (const [pid, uid] of [[1, 1000], [2, 1000], [3, 1001], [4, 1001]] as const) expect(l.admit(user(pid, uid)).ok).toBe(true);
    expect(l.admit(user(5, 1002))).toMatchObject({ ok: false, kind: 'connections' });
    expect(l.admit({ kind: 'unknown', reason: 'x' })).toMatchObject({ ok: false, kind: 'connections' });
    expect(l.admit({ kind: 'service', pid: 6, uid: 1000 }).ok).toBe(true);
    expect(l.admit({ kind: 'root', pid: 7, uid: 0 }).ok).toBe(true);
    expect(l.admit({ kind: 'root', pid: 8, uid: 0 })).toMatchObject({ ok: false, kind: 'connections' });
    const u = limits();
    for (let i = 0; i < 3; i += 1) expect(u.admit({ kind: 'unknown', reason: 'x' }).ok).toBe(true);
    expect(u.admit({ kind: 'unknown', reason: 'x' })).toMatchObject({ ok: false, kind: 'user' });
  });
});
