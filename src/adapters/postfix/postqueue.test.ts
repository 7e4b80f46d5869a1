import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { PostqueueFormatError, StartedPostqueue, parsePostqueueLine, postsuperCount, postsuperIds, scanQueue } from './postqueue.js';

// Saved `postqueue -j` output (Postfix 3.7) and postsuper's stderr; the real programs run in src/modules/queue/*.int.test.ts.
const FIXTURE = readFileSync(new URL('../../../test/fixtures/postfix/postqueue-j.txt', import.meta.url), 'utf8').trim().split('\n');

describe('postqueue -j lines', () => {
  it('reads each line into a typed entry; a missing delay_reason stays absent and forced_expire defaults to false', () => {
    const [deferred, held, bounce] = FIXTURE.map(parsePostqueueLine);
    expect(deferred).toMatchObject({ queue_name: 'deferred', queue_id: '9F6E0210E45', arrival_time: 1795442335, message_size: 404, sender: 's@x.test' });
    expect(held?.recipients).toEqual([{ address: 'b@y.test' }, { address: 'c@y.test', delay_reason: 'deferred transport' }]);
    expect(held?.forced_expire).toBe(true);
    expect(bounce).toMatchObject({ queue_id: '4MfZ2x0Lq9zJx5', sender: 'MAILER-DAEMON', forced_expire: false });
  });

  it('refuses a line that is not JSON or lacks the fields, naming postqueue', () => {
    for (const bad of ['postqueue: fatal: Queue report unavailable - mail system is down', '{}', '[1]', '{"queue_name":"x","queue_id":"A","arrival_time":"1","message_size":1,"sender":"","recipients":[]}',
      '{"queue_name":"x","queue_id":"A","arrival_time":1,"message_size":1,"sender":"","recipients":[{"address":5}]}']) {
      expect(() => parsePostqueueLine(bad)).toThrow(PostqueueFormatError);
    }
  });
});

describe("postsuper's report on stderr", () => {
  const stderr = 'postsuper: 4B0A6210E3F: expired\npostsuper: 4B0A6210E3F: released from hold\npostsuper: 9F6E0210E45: expired\npostsuper: Force-expired: 2 messages\npostsuper: Released from hold: 1 message\n';
  it('reads the count of one action, singular or plural; 0 is 0 and a missing line is null', () => {
    expect(postsuperCount(stderr, 'Force-expired')).toBe(2);
    expect(postsuperCount(stderr, 'Released from hold')).toBe(1);
    expect(postsuperCount('postsuper: Deleted: 0 messages\n', 'Deleted')).toBe(0);
    expect(postsuperCount('postsuper: Deleted: 0 messages\n', 'Placed on hold')).toBeNull();
    expect(postsuperCount('postsuper: warning: Deleted: 3 messages of something else\n', 'Deleted')).toBeNull();
  });
  it('collects the distinct ids named on per-message lines', () => {
    expect([...postsuperIds(stderr)].sort()).toEqual(['4B0A6210E3F', '9F6E0210E45']);
  });
});

describe('a postqueue started early (StartedPostqueue)', () => {
  // A stand-in postqueue first on the PATH: it notes each run in its -c directory and prints the fixture.
  const bin = mkdtempSync(join(tmpdir(), 'mailsvc-postqueue-bin-'));
  const fixture = fileURLToPath(new URL('../../../test/fixtures/postfix/postqueue-j.txt', import.meta.url));
  writeFileSync(join(bin, 'postqueue'), `#!/bin/sh\necho run >> "$2/runs"\ncat '${fixture}'\n`);
  chmodSync(join(bin, 'postqueue'), 0o755);
  const path = process.env.PATH;
  const dirs: string[] = [];
  const configDir = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'mailsvc-postqueue-cfg-'));
    dirs.push(d);
    return d;
  };
  const runs = (d: string): number => readFileSync(join(d, 'runs'), 'utf8').trim().split('\n').length;
  afterEach(() => {
    process.env.PATH = path;
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('is what the scan of its directory reads (postqueue runs once); a scan of another directory runs its own', async () => {
    process.env.PATH = `${bin}:${path ?? ''}`;
    const dir = configDir();
    const started = new StartedPostqueue(dir);
    const ids: string[] = [];
    await scanQueue(dir, (m) => void ids.push(m.queue_id), { started });
    expect(ids).toHaveLength(FIXTURE.length);
    expect(runs(dir)).toBe(1);
    const other = configDir();
    await scanQueue(other, () => undefined, { started });
    expect(runs(other)).toBe(1);
    // Taken once: a second scan of the first directory runs postqueue again.
    await scanQueue(dir, () => undefined, { started });
    expect(runs(dir)).toBe(2);
    started.close();
  });
});

