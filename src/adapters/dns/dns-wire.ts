import { randomInt } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { connect, isIPv6 } from 'node:net';
import type { DnsServer } from './dns-client.js';

/**
 * One DNS question to one server, on the wire (RFC 1035 §4, EDNS0 RFC 6891):
 * what node:dns does not give — the TTL of a record as published, the AA and
 * AD flags, the DNSSEC signatures (the DO bit, RFC 3225) and record types it
 * has no resolver for (TLSA on Node 20). UDP with 4096-byte answers, asked
 * again over TCP when the answer is truncated.
 */
export const TYPE = { A: 1, NS: 2, CNAME: 5, SOA: 6, TXT: 16, AAAA: 28, DS: 43, RRSIG: 46, NSEC: 47, DNSKEY: 48, NSEC3: 50, TLSA: 52 } as const;

/** A resource record: its owner, type, TTL and raw data. */
export type WireRecord = { name: string; type: number; ttl: number; rdata: Buffer };

export type WireMessage = {
  rcode: number;
  /** AA: the server answers from its own zone. */
  authoritative: boolean;
  /** AD: a validating resolver checked the DNSSEC signatures of the answer. */
  authenticated: boolean;
  truncated: boolean;
  answers: WireRecord[];
  authority: WireRecord[];
};

export type QueryOptions = {
  /** Ask the server to recurse (a resolver); off for an authoritative server. */
  recursion?: boolean;
  /** DO bit: the signatures (RRSIG) come with the answer when the zone is signed. */
  dnssecOk?: boolean;
  timeoutMs?: number;
  tries?: number;
};

export function encodeName(name: string): Buffer {
  const labels = name.replace(/\.$/, '').split('.');
  const parts: Buffer[] = [];
  for (const l of labels) {
    const b = Buffer.from(l, 'ascii');
    if (b.length === 0 || b.length > 63) throw new Error(`${name} is not a DNS name`);
    parts.push(Buffer.from([b.length]), b);
  }
  parts.push(Buffer.from([0]));
  return Buffer.concat(parts);
}

/** A query: one question, an OPT record (4096-byte answers; the DO bit when asked). */
export function buildQuery(id: number, name: string, type: number, opts: Pick<QueryOptions, 'recursion' | 'dnssecOk'> = {}): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  // RD when recursion is wanted; AD in a query asks a resolver to say whether it validated (RFC 6840 §5.7).
  header.writeUInt16BE((opts.recursion ? 0x0100 : 0) | (opts.dnssecOk ? 0x0020 : 0), 2);
  header.writeUInt16BE(1, 4); // QDCOUNT
  header.writeUInt16BE(1, 10); // ARCOUNT: the OPT record
  const question = Buffer.concat([encodeName(name), Buffer.from([type >> 8, type & 0xff, 0, 1])]);
  // OPT: root name, type 41, class = UDP payload size 4096, extended rcode 0, version 0, flags (DO = 0x8000), no options.
  const opt = Buffer.from([0, 0, 41, 0x10, 0x00, 0, 0, opts.dnssecOk ? 0x80 : 0, 0, 0, 0]);
  return Buffer.concat([header, question, opt]);
}

/** Reads a (possibly compressed) name; the name and the offset after it. */
export function readName(buf: Buffer, offset: number): { name: string; next: number } {
  const labels: string[] = [];
  let o = offset;
  let next = -1;
  for (let guard = 0; guard < 128; guard++) {
    const len = buf.readUInt8(o);
    if (len === 0) return { name: labels.join('.').toLowerCase(), next: next === -1 ? o + 1 : next };
    if ((len & 0xc0) === 0xc0) {
      if (next === -1) next = o + 2;
      o = buf.readUInt16BE(o) & 0x3fff;
      continue;
    }
    labels.push(buf.subarray(o + 1, o + 1 + len).toString('ascii'));
    o += 1 + len;
  }
  throw new Error('a name in the answer does not end');
}

function readRecords(buf: Buffer, start: number, count: number): { records: WireRecord[]; next: number } {
  const records: WireRecord[] = [];
  let o = start;
  for (let i = 0; i < count; i++) {
    const { name, next } = readName(buf, o);
    o = next;
    const type = buf.readUInt16BE(o);
    const ttl = buf.readUInt32BE(o + 4);
    const rdlen = buf.readUInt16BE(o + 8);
    const rdata = buf.subarray(o + 10, o + 10 + rdlen);
    if (rdata.length !== rdlen) throw new Error('a record runs past the end of the answer');
    o += 10 + rdlen;
    records.push({ name, type, ttl, rdata });
  }
  return { records, next: o };
}

/** Parses an answer to the query with this id; throws on one that is not. */
export function parseMessage(buf: Buffer, id: number): WireMessage {
  if (buf.length < 12 || buf.readUInt16BE(0) !== id) throw new Error('an answer that is not to this question');
  const flags = buf.readUInt16BE(2);
  if ((flags & 0x8000) === 0) throw new Error('not an answer');
  const base = { rcode: flags & 0x000f, authoritative: (flags & 0x0400) !== 0, authenticated: (flags & 0x0020) !== 0, truncated: (flags & 0x0200) !== 0 };
  if (base.truncated) return { ...base, answers: [], authority: [] };
  let o = 12;
  for (let i = 0; i < buf.readUInt16BE(4); i++) o = readName(buf, o).next + 4;
  const an = readRecords(buf, o, buf.readUInt16BE(6));
  const ns = readRecords(buf, an.next, buf.readUInt16BE(8));
  return { ...base, answers: an.records, authority: ns.records };
}

export function overUdp(server: DnsServer, query: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = createSocket(isIPv6(server.host) ? 'udp6' : 'udp4');
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('error', (err) => {
      clearTimeout(timer);
      socket.close();
      reject(err);
    });
    socket.on('message', (msg) => {
      if (msg.length < 2 || msg.readUInt16BE(0) !== query.readUInt16BE(0)) return;
      clearTimeout(timer);
      socket.close();
      resolve(msg);
    });
    socket.send(query, server.port, server.host);
  });
}

export function overTcp(server: DnsServer, query: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: server.host, port: server.port });
    let buf = Buffer.alloc(0);
    socket.setTimeout(timeoutMs, () => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms (TCP)`));
    });
    socket.on('error', reject);
    socket.on('connect', () => {
      const len = Buffer.alloc(2);
      len.writeUInt16BE(query.length);
      socket.write(Buffer.concat([len, query]));
    });
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        socket.end();
        resolve(buf.subarray(2, 2 + buf.readUInt16BE(0)));
      }
    });
  });
}

/** Asks one server one question (TCP when UDP is truncated); throws when it does not answer. */
export async function queryWire(server: DnsServer, name: string, type: number, opts: QueryOptions = {}): Promise<WireMessage> {
  const timeoutMs = opts.timeoutMs ?? 2000;
  let last: unknown = new Error('no answer');
  for (let attempt = 0; attempt < (opts.tries ?? 2); attempt++) {
    const id = randomInt(0, 0x10000);
    try {
      const q = buildQuery(id, name, type, opts);
      let r = parseMessage(await overUdp(server, q, timeoutMs), id);
      if (r.truncated) r = parseMessage(await overTcp(server, q, timeoutMs), id);
      if (r.truncated) throw new Error('truncated even over TCP');
      return r;
    } catch (err) {
      last = err;
    }
  }
  throw last instanceof Error ? last : new Error(String(last));
}
