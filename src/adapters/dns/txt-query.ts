import { randomInt } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { connect, isIPv6 } from 'node:net';
import type { DnsServer } from './dns-client.js';

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

const TYPE_TXT = 16;

function encodeName(name: string): Buffer {
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

export function txtQuery(id: number, name: string): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header.writeUInt16BE(0x0000, 2); // a plain query, no recursion wanted: authoritative servers answer from their zone
  header.writeUInt16BE(1, 4); // QDCOUNT
  header.writeUInt16BE(1, 10); // ARCOUNT: the OPT record
  const question = Buffer.concat([encodeName(name), Buffer.from([0, TYPE_TXT, 0, 1])]);
  // OPT: root name, type 41, class = UDP payload size 4096, TTL 0, no options.
  const opt = Buffer.from([0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 0]);
  return Buffer.concat([header, question, opt]);
}

/** Skips a (possibly compressed) name; the offset after it. */
function skipName(buf: Buffer, offset: number): number {
  let o = offset;
  for (let guard = 0; guard < 128; guard++) {
    const len = buf.readUInt8(o);
    if (len === 0) return o + 1;
    if ((len & 0xc0) === 0xc0) return o + 2;
    o += 1 + len;
  }
  throw new Error('a name in the answer does not end');
}

/** Reads an answer to `txtQuery(id, …)`; `truncated` when it must be asked over TCP. */
export function parseTxtAnswer(buf: Buffer, id: number): TxtAnswer | 'truncated' {
  if (buf.length < 12 || buf.readUInt16BE(0) !== id) return { kind: 'error', detail: 'an answer that is not to this question' };
  const flags = buf.readUInt16BE(2);
  if ((flags & 0x8000) === 0) return { kind: 'error', detail: 'not an answer' };
  if (flags & 0x0200) return 'truncated';
  const rcode = flags & 0x000f;
  // Only an authoritative answer carries the TTL as published (a cache counts it down).
  if (rcode === 0 && (flags & 0x0400) === 0) return { kind: 'error', detail: 'the server is not authoritative for this name (no AA flag)' };
  if (rcode === 3) return { kind: 'none' };
  if (rcode !== 0) return { kind: 'error', detail: `rcode ${rcode}${rcode === 5 ? ' (refused)' : rcode === 2 ? ' (server failure)' : ''}` };
  const qd = buf.readUInt16BE(4);
  const an = buf.readUInt16BE(6);
  let o = 12;
  for (let i = 0; i < qd; i++) o = skipName(buf, o) + 4;
  const values: string[] = [];
  let ttl = 0;
  for (let i = 0; i < an; i++) {
    o = skipName(buf, o);
    const type = buf.readUInt16BE(o);
    const rrTtl = buf.readUInt32BE(o + 4);
    const rdlen = buf.readUInt16BE(o + 8);
    const rdata = buf.subarray(o + 10, o + 10 + rdlen);
    if (rdata.length !== rdlen) throw new Error('a record runs past the end of the answer');
    o += 10 + rdlen;
    if (type !== TYPE_TXT) continue;
    const strings: Buffer[] = [];
    for (let p = 0; p < rdata.length; ) {
      const len = rdata.readUInt8(p);
      strings.push(rdata.subarray(p + 1, p + 1 + len));
      p += 1 + len;
    }
    values.push(Buffer.concat(strings).toString('utf8'));
    ttl = Math.max(ttl, rrTtl);
  }
  return values.length === 0 ? { kind: 'none' } : { kind: 'records', values, ttl };
}

function overUdp(server: DnsServer, query: Buffer, timeoutMs: number): Promise<Buffer> {
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

function overTcp(server: DnsServer, query: Buffer, timeoutMs: number): Promise<Buffer> {
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

/** Asks one server for the TXT records at `name`; never throws (a failure is `error`). */
export async function queryTxt(server: DnsServer, name: string, opts: { timeoutMs?: number; tries?: number } = {}): Promise<TxtAnswer> {
  const timeoutMs = opts.timeoutMs ?? 2000;
  let last = 'no answer';
  for (let attempt = 0; attempt < (opts.tries ?? 2); attempt++) {
    const id = randomInt(0, 0x10000);
    try {
      const q = txtQuery(id, name);
      let r = parseTxtAnswer(await overUdp(server, q, timeoutMs), id);
      if (r === 'truncated') r = parseTxtAnswer(await overTcp(server, q, timeoutMs), id);
      if (r === 'truncated') return { kind: 'error', detail: `TXT ${name}: truncated even over TCP` };
      return r;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
  }
  return { kind: 'error', detail: `TXT ${name}: ${last}` };
}
