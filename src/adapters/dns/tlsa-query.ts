import type { DnsServer } from './dns-client.js';
import { TYPE, queryWire } from './dns-wire.js';
import type { WireMessage } from './dns-wire.js';
import { authoritativeOutcome } from './txt-query.js';

/** A TLSA record (RFC 6698 §2.1): certificate usage, selector, matching type, association data (lowercase hex). */
export type Tlsa = { usage: number; selector: number; matching: number; data: string };

/**
 * The TLSA records at a name as one authoritative server answers them, with
 * their TTL, and whether the answer is signed: asked with the DO bit, a
 * signed zone sends RRSIG records with every answer (the TLSA set's own, or
 * the SOA and NSEC/NSEC3 proving there is none); an unsigned zone sends none.
 */
export type TlsaAnswer =
  | { kind: 'records'; records: Tlsa[]; ttl: number; signed: boolean }
  | { kind: 'none'; signed: boolean }
  | { kind: 'error'; detail: string };

export const tlsaText = (t: Tlsa): string => `${t.usage} ${t.selector} ${t.matching} ${t.data}`;

function parseTlsa(rdata: Buffer): Tlsa {
  if (rdata.length < 4) throw new Error('a TLSA record shorter than 4 bytes');
  return { usage: rdata.readUInt8(0), selector: rdata.readUInt8(1), matching: rdata.readUInt8(2), data: rdata.subarray(3).toString('hex') };
}

const signedMessage = (m: WireMessage): boolean => [...m.answers, ...m.authority].some((r) => r.type === TYPE.RRSIG);

/** Asks one authoritative server for the TLSA records at `name` (no recursion, the AA flag required); never throws. */
export async function queryTlsa(server: DnsServer, name: string, opts: { timeoutMs?: number; tries?: number } = {}): Promise<TlsaAnswer> {
  let m: WireMessage;
  try {
    m = await queryWire(server, name, TYPE.TLSA, { ...opts, dnssecOk: true });
  } catch (err) {
    return { kind: 'error', detail: `TLSA ${name}: ${err instanceof Error ? err.message : String(err)}` };
  }
  const outcome = authoritativeOutcome(m);
  if (outcome === 'none') return { kind: 'none', signed: signedMessage(m) };
  if (outcome !== 'records') return { kind: 'error', detail: `TLSA ${name}: ${outcome.detail}` };
  const tlsa = m.answers.filter((r) => r.type === TYPE.TLSA && r.name === name.toLowerCase().replace(/\.$/, ''));
  try {
    return tlsa.length === 0 ? { kind: 'none', signed: signedMessage(m) } : { kind: 'records', records: tlsa.map((r) => parseTlsa(r.rdata)), ttl: Math.max(...tlsa.map((r) => r.ttl)), signed: signedMessage(m) };
  } catch (err) {
    return { kind: 'error', detail: `TLSA ${name}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/**
 * Whether a resolver validated the answer for `name` (the AD flag, asked
 * for with AD and DO, recursion on): true only when the whole chain from the
 * root's key to the zone's DS and DNSKEY checks out there. Null: no answer.
 */
export async function resolverValidates(server: DnsServer, name: string, type: number = TYPE.TLSA, opts: { timeoutMs?: number; tries?: number } = {}): Promise<boolean | null> {
  try {
    const m = await queryWire(server, name, type, { ...opts, recursion: true, dnssecOk: true });
    return m.rcode === 0 || m.rcode === 3 ? m.authenticated : null;
  } catch {
    return null;
  }
}
