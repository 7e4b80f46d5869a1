import { describe, expect, it } from 'vitest';
import { EventBuilder, LineScanner, classicTime, parseLine } from './postfix-log.js';

// Real line shapes (the test Postfix's log; Debian's rsyslog for RFC 3339).
const REF = new Date(2026, 10, 23, 16, 0, 0);

describe('parseLine', () => {
  it('reads the events the collector joins, whatever the syslog name (postfix, postfix/submission, postfix-test-N)', () => {
    expect(parseLine('Nov 23 15:49:33 mail postfix/submission/smtpd[21742]: F3EA720C66F: client=localhost[127.0.0.1], sasl_method=PLAIN, sasl_username=alice@example.org', REF))
      .toEqual({ kind: 'client', qid: 'F3EA720C66F', authenticated: true });
    expect(parseLine('Nov 23 15:49:34 mail postfix-test-33419/smtpd[21753]: 284BB20C680: client=localhost[127.0.0.1]', REF)).toEqual({ kind: 'client', qid: '284BB20C680', authenticated: false });
    expect(parseLine('Nov 23 15:49:33 mail postfix/qmgr[21740]: F3EA720C66F: from=<Alice@Example.org>, size=490, nrcpt=1 (queue active)', REF))
      .toEqual({ kind: 'from', qid: 'F3EA720C66F', at: new Date(2026, 10, 23, 15, 49, 33).getTime(), sender: 'alice@example.org', size: 490 });
    expect(parseLine('Nov 23 15:49:34 mail postfix/lmtp[21748]: F3EA720C66F: to=<bob@example.org>, relay=mail.test.invalid[/x/dovecot-lmtp], delay=0.08, dsn=2.0.0, status=sent (250 2.0.0 Saved)', REF))
      .toMatchObject({ kind: 'delivered', recipient: 'bob@example.org', local: true });
    expect(parseLine('Nov 23 15:49:34 mail postfix/smtp[9]: 1385920C66F: to=<x@remote.test>, relay=mx.remote.test[192.0.2.1]:25, delay=1, dsn=2.0.0, status=sent (250 ok)', REF))
      .toMatchObject({ kind: 'delivered', local: false });
    expect(parseLine('Nov 23 15:49:34 mail postfix/qmgr[21740]: F3EA720C66F: removed', REF)).toMatchObject({ kind: 'removed', qid: 'F3EA720C66F' });
  });

  it('ignores what it does not need: deferrals, bounces, connects, other programs', () => {
    expect(parseLine('Nov 23 15:49:34 mail postfix/smtp[9]: 1385920C66F: to=<x@remote.test>, relay=none, delay=1, dsn=4.4.1, status=deferred (connect refused)', REF)).toBeNull();
    expect(parseLine('Nov 23 15:49:33 mail postfix/submission/smtpd[21742]: connect from localhost[127.0.0.1]', REF)).toBeNull();
    expect(parseLine('Nov 23 15:49:33 mail dovecot: lmtp(bob@example.org): saved mail to INBOX', REF)).toBeNull();
    expect(parseLine('Foo 23 15:49:33 mail postfix/qmgr[1]: ABCDEF123: removed', REF)).toBeNull();
  });

  it('never reads past the line it scans: a deferral followed by a delivered line, a from= line without its size', () => {
    // Lines scanned in place inside a chunk: the search for `, status=sent ` or `, size=` must stop at the line's end.
    const chunk = [
      'Nov 23 15:49:34 mail postfix/smtp[9]: 1385920C66F: to=<x@remote.test>, relay=none, delay=1, dsn=4.4.1, status=deferred (connect refused)',
      'Nov 23 15:49:35 mail postfix/smtp[9]: 2385920C66F: to=<y@remote.test>, relay=mx.remote.test[192.0.2.1]:25, delay=1, dsn=2.0.0, status=sent (250 ok)',
      'Nov 23 15:49:35 mail postfix/qmgr[21740]: 3385920C66F: from=<a@example.org>, nrcpt=1 (queue active)',
      'Nov 23 15:49:36 mail postfix/qmgr[21740]: 4385920C66F: from=<b@example.org>, size=77, nrcpt=1 (queue active)',
      'Nov 23 15:49:36 mail postfix/smtpd[21753]: 5385920C66F: client=localhost[127.0.0.1]',
      'Nov 23 15:49:36 mail postfix/submission/smtpd[21742]: 6385920C66F: client=localhost[127.0.0.1], sasl_method=PLAIN, sasl_username=alice@example.org',
      '',
    ].join('\n');
    const scanner = new LineScanner(REF);
    const events = [];
    for (let a = 0, nl = chunk.indexOf('\n'); nl >= 0; a = nl + 1, nl = chunk.indexOf('\n', a)) {
      const sink = new EventBuilder();
      events.push(scanner.scan(chunk, a, nl, undefined, sink) ? sink.event : null);
    }
    expect(events).toEqual([
      null,
      expect.objectContaining({ kind: 'delivered', qid: '2385920C66F', recipient: 'y@remote.test' }),
      null,
      expect.objectContaining({ kind: 'from', qid: '4385920C66F', size: 77 }),
      { kind: 'client', qid: '5385920C66F', authenticated: false },
      { kind: 'client', qid: '6385920C66F', authenticated: true },
    ]);
  });

  it('reads RFC 3339 with an offset or Z, fractions included, to the same instant', () => {
    const z = parseLine('2026-11-23T15:49:33.250Z mail postfix/qmgr[1]: ABCDEF123: removed', REF);
    const off = parseLine('2026-11-23T17:49:33.250000+02:00 mail postfix/qmgr[1]: ABCDEF123: removed', REF);
    expect(z).toEqual({ kind: 'removed', qid: 'ABCDEF123', at: Date.UTC(2026, 10, 23, 15, 49, 33, 250) });
    expect(off).toEqual(z);
  });

  it('reads journalctl -o short-iso-precise lines, whose offset has no colon (+0000, -0330), to the same instant', () => {
    // As systemd 252 (Debian 12) prints them: `journalctl --utc -o short-iso-precise`, and in a zone west of UTC.
    const utc = parseLine('2026-11-23T15:49:33.250000+0000 mail postfix/qmgr[1]: ABCDEF123: removed', REF);
    const west = parseLine('2026-11-23T12:19:33.250000-0330 mail postfix/qmgr[1]: ABCDEF123: removed', REF);
    expect(utc).toEqual({ kind: 'removed', qid: 'ABCDEF123', at: Date.UTC(2026, 10, 23, 15, 49, 33, 250) });
    expect(west).toEqual(utc);
    expect(parseLine('2026-11-23T15:49:33.250000+00 mail postfix/qmgr[1]: ABCDEF123: removed', REF)).toBeNull();
  });

  it('puts a classic timestamp in the year that keeps it before the reference: December read in January is last year', () => {
    const jan = new Date(2027, 0, 1, 0, 10);
    expect(new Date(classicTime(11, 31, 23, 59, 0, jan)).getFullYear()).toBe(2026);
    expect(new Date(classicTime(0, 1, 0, 5, 0, jan)).getFullYear()).toBe(2027);
    const dec = parseLine('Dec 31 23:59:59 mail postfix/qmgr[1]: ABCDEF123: removed', jan);
    const jan1 = parseLine('Jan  1 00:00:01 mail postfix/qmgr[1]: ABCDEF123: removed', jan);
    expect(dec?.kind === 'removed' && new Date(dec.at).getFullYear()).toBe(2026);
    expect(jan1?.kind === 'removed' && new Date(jan1.at).getFullYear()).toBe(2027);
  });

  it('decodes a non-ASCII address as UTF-8 and lower-cases it; reads a day written with one space or padded', () => {
    expect(parseLine('Nov 23 15:49:34 mail postfix/lmtp[1]: ABCDEF123: to=<Jürgen@Example.org>, relay=x, dsn=2.0.0, status=sent (250 ok)', REF))
      .toMatchObject({ kind: 'delivered', recipient: 'jürgen@example.org' });
    const at = new Date(2026, 10, 3, 15, 49, 34).getTime();
    expect(parseLine('Nov  3 15:49:34 mail postfix/qmgr[1]: ABCDEF123: removed', REF)).toEqual({ kind: 'removed', qid: 'ABCDEF123', at });
    expect(parseLine('Nov 3 15:49:34 mail postfix/qmgr[1]: ABCDEF123: removed', REF)).toEqual({ kind: 'removed', qid: 'ABCDEF123', at });
    expect(parseLine('Nov 03 15:49:34 mail postfix/qmgr[1]: ABCDEF123: removed', REF)).toEqual({ kind: 'removed', qid: 'ABCDEF123', at });
  });

  it('refuses malformed lines: no pid, a non-Postfix service, a short queue id, a broken time or size', () => {
    for (const line of [
      'Nov 23 15:49:34 mail postfix/qmgr: ABCDEF123: removed',
      'Nov 23 15:49:34 mail postfix/qmgr[]: ABCDEF123: removed',
      'Nov 23 15:49:34 mail postfix/qmgr[12a]: ABCDEF123: removed',
      'Nov 23 15:49:34 mail qmgr[1]: ABCDEF123: removed',
      'Nov 23 15:49:34 mail postfix/cleanup[1]: ABCDEF123: message-id=<x@y>',
      'Nov 23 15:49:34 mail postfix/qmgr[1]: ABC12: removed',
      'Nov 23 15:49:34 mail postfix/qmgr[1]: ABCDEF123: removed now',
      'Nov 23 25:49:34x mail postfix/qmgr[1]: ABCDEF123: removed',
      'Nov 2x 15:49:34 mail postfix/qmgr[1]: ABCDEF123: removed',
      '2026-11-23 15:49:34 mail postfix/qmgr[1]: ABCDEF123: removed',
      'Nov 23 15:49:34 mail postfix/qmgr[1]: ABCDEF123: from=<a@b>, size=x12, nrcpt=1 (queue active)',
      'Nov 23 15:49:34 mail postfix/qmgr[1]: ABCDEF123: from=<a@b, size=12, nrcpt=1',
      'Nov 23 15:49:34 mail postfix/smtp[1]: ABCDEF123: to=<x@remote.test>, relay=none, status=sent',
      'Nov 23 15:49:34 mail dovecot[1]: lmtp(bob@example.org): saved mail to INBOX',
      '',
    ]) expect(parseLine(line, REF), line).toBeNull();
  });
});
