import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../test/helpers/cli.js';
import { MAX_CANDIDATES, holderCandidates, inUnitCgroup, realUid, serverPeerInodes, socketInode } from './peer-ss.js';
import { PeerLimits } from './peer-limits.js';

const fixture = (name: string): string => readFileSync(join(REPO_ROOT, 'test/fixtures/ss', name), 'utf8');

describe('reading ss output (saved from iproute2 6.1, test/fixtures/ss)', () => {
  it('maps each of the helper’s own sockets to its peer’s inode (ss -xnH src <path>)', () => {
    expect([...serverPeerInodes(fixture('server-src.txt'))]).toEqual([[97640, 97601], [97600, 97599]]);
  });

  it('does not read a peer inode from a line with a users:(…) tail, nor a listening socket, nor an inode listed twice', () => {
    // In the unfiltered listing only the line a client forged with a newline in its socket's name parses:
    // the reason the helper asks ss for the lines of its own socket's name only.
    expect([...serverPeerInodes(fixture('all-xpn.txt'))]).toEqual([[999, 1]]);
    expect(serverPeerInodes('u_str LISTEN 0 511 /run/h.sock 100 * 0\n').size).toBe(0);
    const twice = 'u_str ESTAB 0 0 /run/h.sock 7 * 8\nu_str ESTAB 0 0 /run/h.sock 7 * 9\n';
    expect(serverPeerInodes(twice).has(7)).toBe(false);
    // A socket path with spaces: the inodes are read from the right.
    expect([...serverPeerInodes('u_str ESTAB 0 0 /run/my helper.sock 11 * 12\n')]).toEqual([[11, 12]]);
  });

  it('lists every pid/fd pair on the lines naming the peer inode, forged ones too (they are checked in /proc later)', () => {
    const all = fixture('all-xpn.txt');
    const pairs = (inode: number): string[] => (holderCandidates(all, inode) ?? []).map((h) => `${h.pid}/${h.fd}`).sort();
    // 97601: the forked child’s own socket (fd 6), behind a name with a newline and a comm that claim pid 1.
    expect(pairs(97601)).toEqual(['1/3', '1/9', '2053/6', '2119/6']);
    // 97599: shared after fork by 2053 (fd 4) and 2119 (fd 4).
    expect(pairs(97599)).toContain('2053/4');
    expect(pairs(97599)).toContain('2119/4');
    expect(pairs(123456)).toEqual([]);
  });

  it('gives up on a listing stuffed with candidates', () => {
    const users = Array.from({ length: MAX_CANDIDATES + 1 }, (_, i) => `("x",pid=${i + 10},fd=3)`).join(',');
    expect(holderCandidates(`u_str ESTAB 0 0 * 5 * 6 users:(${users})\n`, 5)).toBeNull();
  });

  it('reads socket links, the real uid and the cgroup', () => {
    expect(socketInode('socket:[97601]')).toBe(97601);
    expect(socketInode('pipe:[97601]')).toBeNull();
    expect(socketInode('/tmp/socket:[1]')).toBeNull();
    expect(realUid('Name:\tnode\nUid:\t65534\t0\t0\t0\nGid:\t0\t0\t0\t0\n')).toBe(65534);
    expect(realUid('Name:\tnode\n')).toBeNull();
    expect(inUnitCgroup('0::/system.slice/mailsvc.service\n', 'mailsvc.service')).toBe(true);
    expect(inUnitCgroup('1:name=systemd:/system.slice/mailsvc.service\n0::/\n', 'mailsvc.service')).toBe(true);
    expect(inUnitCgroup('0::/system.slice/mailsvc-update@x.service\n', 'mailsvc.service')).toBe(false);
    expect(inUnitCgroup('0::/user.slice/user-999.slice/session-3.scope\n', 'mailsvc.service')).toBe(false);
    expect(inUnitCgroup('0::/system.slice/xmailsvc.service\n', 'mailsvc.service')).toBe(false);
  });
});

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
