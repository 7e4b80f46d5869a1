import type { Peer } from './peer-identity.js';

export type PeerLimitOptions = {
  /** Connections at once for unprivileged peers (users and unknown peers). */
  maxConnections: number;
  /** Slots beyond maxConnections that only root and the service's own process may take. */
  reserve: number;
  /** Connections one process may hold (every peer, root too). */
  perPid: number;
  /** Connections one uid may hold; root and the service's own process are not counted. Unknown peers share one such count. */
  perUid: number;
};

export type RefusalKind = 'connections' | 'process' | 'user';

export type Admission = { ok: true; release: () => void } | { ok: false; kind: RefusalKind; detail: string };

const privileged = (peer: Peer): boolean => peer.kind === 'root' || peer.kind === 'service';

/** Counts the connections the helper holds, by process and by uid, and decides whether one more may stay. */
export class PeerLimits {
  private total = 0;
  private readonly byPid = new Map<number, number>();
  private readonly byUid = new Map<string, number>();

  constructor(private readonly opts: PeerLimitOptions) {}

  get connections(): number {
    return this.total;
  }

  admit(peer: Peer): Admission {
    const o = this.opts;
    const cap = privileged(peer) ? o.maxConnections + o.reserve : o.maxConnections;
    if (this.total >= cap) {
      const whose = privileged(peer) ? 'including the reserve for root and the service' : `${o.reserve} more are kept for root and the service`;
      return { ok: false, kind: 'connections', detail: `the helper holds ${this.total} connections, its limit (${whose})` };
    }
    const pid = peer.kind === 'unknown' ? null : peer.pid;
    if (pid !== null && (this.byPid.get(pid) ?? 0) >= o.perPid) {
      return { ok: false, kind: 'process', detail: `at most ${o.perPid} connections per process (pid ${pid})` };
    }
    const uid = peer.kind === 'user' ? String(peer.uid) : peer.kind === 'unknown' ? 'unknown' : null;
    if (uid !== null && (this.byUid.get(uid) ?? 0) >= o.perUid) {
      const who = uid === 'unknown' ? 'for peers the helper cannot identify' : `per user (uid ${uid})`;
      return { ok: false, kind: 'user', detail: `at most ${o.perUid} connections ${who}` };
    }
    this.total += 1;
    if (pid !== null) this.byPid.set(pid, (this.byPid.get(pid) ?? 0) + 1);
    if (uid !== null) this.byUid.set(uid, (this.byUid.get(uid) ?? 0) + 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.total -= 1;
        if (pid !== null) decrement(this.byPid, pid);
        if (uid !== null) decrement(this.byUid, uid);
      },
    };
  }
}

function decrement<K>(map: Map<K, number>, key: K): void {
  const n = (map.get(key) ?? 1) - 1;
  if (n <= 0) map.delete(key);
  else map.set(key, n);
}
