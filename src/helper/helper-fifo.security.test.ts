import { execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, closeSync, constants, mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { request, startHelperProcess } from '../../test/helpers/helper-process.js';
import type { HelperProcess } from '../../test/helpers/helper-process.js';
import { skipNotice } from '../../test/helpers/services.js';
import { NOBODY, askAsNobody, runAsNobody, unprivilegedUnavailable } from '../../test/helpers/unprivileged-client.js';
import type { NobodyExchange } from '../../test/helpers/unprivileged-client.js';

const why = unprivilegedUnavailable();
if (why) skipNotice('an unprivileged client beside a root helper', why);

/** A writer on the FIFO, opened without blocking: it succeeds only while some process has the FIFO open for reading. */
function openWriter(fifo: string): number | null {
  try {
    return openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  } catch {
    return null;
  }
}

/**
 * Finding 3 of the second security review: the helper read a file the caller
 * named with a blocking read, so a FIFO named as an nftables file stopped its
 * event loop, and every later request on every connection went unanswered.
 * Here an unprivileged member of the socket's group names a FIFO it made; a
 * second, well-formed request on another connection must still be answered.
 */
describe.skipIf(why !== null)('a FIFO named by a caller never stops the helper for other callers', { timeout: 60_000 }, () => {
  let root: string;
  let fifo: string;
  let helper: HelperProcess;
  let hostile: { child: ChildProcess; done: Promise<NobodyExchange> } | undefined;
  let writer: number | null = null;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'mailsvc-fifo-'));
    chmodSync(root, 0o755);
    const mine = join(root, 'attacker');
    mkdirSync(mine, { mode: 0o755 });
    chownSync(mine, NOBODY, NOBODY);
    fifo = join(mine, 'ruleset.nft');
    const made = runAsNobody('mkfifo', ['-m', '0644', fifo]);
    expect(made.status, made.stderr).toBe(0);
    // The recording fakes stand in for fail2ban-client: the second request is cheap and needs no daemon.
    helper = await startHelperProcess({ env: { MAILSVC_HELPER_SOCKET_GROUP: String(NOBODY) } });
    chmodSync(helper.dir, 0o755);
  });
  afterAll(async () => {
    // A helper still blocked on the FIFO gets its end of file, so it can stop.
    writer ??= openWriter(fifo);
    if (writer !== null) closeSync(writer);
    hostile?.child.kill('SIGKILL');
    await helper?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('nft-check <fifo> on one connection; f2b-status on a second is answered within 10 s', async () => {
    expect(execFileSync('stat', ['-c', '%F %u', fifo], { encoding: 'utf8' }).trim()).toBe(`fifo ${NOBODY}`);
    hostile = askAsNobody(helper.socket, [request('fifo', 'nft-check', [fifo])], { timeoutMs: 50_000 });
    let answered: NobodyExchange | undefined;
    void hostile.done.then((r) => (answered = r));
    // Either the helper answered the FIFO request, or it holds the FIFO open for reading (it is stuck in that read; the writer
    // opened here keeps it there, without data, until the end of the test).
    await vi.waitFor(() => expect(answered !== undefined || (writer = openWriter(fifo)) !== null).toBe(true), { timeout: 20_000, interval: 50 });

    const started = Date.now();
    const second = await askAsNobody(helper.socket, [request('next', 'f2b-status', [])], { timeoutMs: 10_000 }).done;
    expect(second.timedOut, `no answer within 10 s: the helper is blocked (${Date.now() - started} ms)`).toBe(false);
    expect(second.answers[0]).toMatchObject({ id: 'next', ok: true, code: 0 });
    expect(helper.ran()).toContain(`fail2ban-client -c /etc/fail2ban -s /run/fail2ban/fail2ban.sock status`);

    // The FIFO request itself is refused at once, and the helper never opened the FIFO.
    const first = await hostile.done;
    expect(first.answers[0]).toMatchObject({ id: 'fifo', ok: false, error: 'unknown-action' });
    expect(writer).toBeNull();
  });
});
