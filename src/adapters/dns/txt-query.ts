import type { DnsServer } from './dns-client.js';
import { TYPE, queryWire } from './dns-wire.js';
import type { WireMessage } from './dns-wire.js';

/**
 * The TXT records at a name as one server answers them, with their TTL:
 * node:dns does not give the TTL of a TXT record, and the DKIM rotation waits
 * for exactly the TTL the authoritative servers publish. One question over UDP
 * (EDNS0, 4096-byte answers), asked again over TCP when the answer is
 * truncated (an RSA-4096 key's record is longer than 512 bytes).
 */
export type TxtAnswer =
  | { kind: 'records'; values: string[]; ttl: number }
  | { kind: 'none' }
  | { kind: 'error'; detail: string };

/** What an authoritative answer says, or why it is not one (no AA flag: a cache counts the TTL down). */
export function authoritativeOutcome(m: WireMessage): 'none' | 'records' | { detail: string } {
  if (m.rcode === 0 && !m.authoritative) return { detail: 'the server is not authoritative for this name (no AA flag)' };
  if (m.rcode === 3) return 'none';
  if (m.rcode !== 0) return { detail: `rcode ${m.rcode}${m.rcode === 5 ? ' (refused)' : m.rcode === 2 ? ' (server failure)' : ''}` };
  return 'records';
}

/** The strings of one TXT record's data joined. */
function txtData(rdata: Buffer): string {
  const strings: Buffer[] = [];
  for (let p = 0; p < rdata.length; ) {
    const len = rdata.readUInt8(p);
    strings.push(rdata.subarray(p + 1, p + 1 + len));
    p += 1 + len;
  }
  return Buffer.concat(strings).toString('utf8');
}

/** Asks one server for the TXT records at `name`; never throws (a failure is `error`). */
export async function queryTxt(server: DnsServer, name: string, opts: { timeoutMs?: number; tries?: number } = {}): Promise<TxtAnswer> {
  let m: WireMessage;
  try {
    m = await queryWire(server, name, TYPE.TXT, opts);
  } catch (err) {
    return { kind: 'error', detail: `TXT ${name}: ${err instanceof Error ? err.message : String(err)}` };
  }
  const outcome = authoritativeOutcome(m);
  if (outcome === 'none') return { kind: 'none' };
  if (outcome !== 'records') return { kind: 'error', detail: outcome.detail };
  const txt = m.answers.filter((r) => r.type === TYPE.TXT);
  return txt.length === 0 ? { kind: 'none' } : { kind: 'records', values: txt.map((r) => txtData(r.rdata)), ttl: Math.max(...txt.map((r) => r.ttl)) };
}
