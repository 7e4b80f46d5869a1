/**
 * Issue 35, the fault matrix on an installed Debian 12 guest (test/helpers/fault-matrix.ts has the operations,
 * the faults and what a cell checks; docs/reliability.md the table). MAILSVC_FAULT_MATRIX=sample runs the seeded
 * sample (every operation and every fault at least once); `npm run fault-matrix` runs every cell;
 * MAILSVC_FAULT_CELLS=op:fault:seed replays one. Each cell prints one line "[fault-matrix] op × fault (seed) → …".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from './helpers/guest-api.js';
import { installedGuest, installedGuestUnavailable, until, type InstalledGuest } from './helpers/installed-guest.js';
import { CHECKERS, FAULTS, UNITS, operations, pickCells, prng, sh, type Host, type Operation } from './helpers/fault-matrix.js';
import { skipNotice } from './helpers/services.js';

/**
 * Run by `npm run fault-matrix` (MAILSVC_FAULT_MATRIX=full), `MAILSVC_FAULT_MATRIX=sample`, or
 * MAILSVC_FAULT_CELLS. `npm test` leaves it out while cells of the full matrix still fail on known defects
 * (docs/reliability.md, "Results"): the CI sample joins `npm test` once they are fixed.
 */
const asked = Boolean(process.env.MAILSVC_FAULT_MATRIX || process.env.MAILSVC_FAULT_CELLS);
if (!asked) console.warn('[skip] the fault matrix runs with npm run fault-matrix (or MAILSVC_FAULT_MATRIX=sample); npm test leaves it out until the known failures in docs/reliability.md are fixed');
const { missing, lower } = asked ? installedGuestUnavailable() : { missing: 'not asked for', lower: '' };
if (asked && missing) skipNotice('a Debian 12 guest under systemd-nspawn (the fault matrix)', missing);

const OPS = operations();
const CELLS = pickCells(
  OPS.map((o) => o.name),
  FAULTS.map((f) => f.name),
  process.env,
);
const DOMAIN = 'example.org';
const ALICE = `alice@${DOMAIN}`;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));


describe.skipIf(!asked || missing !== null)('the fault matrix: one fault at a seeded point of each operation, on an installed host', () => {
  let ig: InstalledGuest;
  const durations = new Map<string, number>();
  let baselineFails: string[] = [];
  const h: Host = {
    get guest() {
      return ig.guest;
    },
    bearer: '',
    tag: '',
    api: (method, path, body) => api(ig.guest, method, path, h.bearer, body),
  };

  const doctorFails = async (): Promise<string[]> => {
    const r = await ig.guest.run(['mailsvc', 'doctor', '--json'], { timeoutMs: 180_000 });
    try {
      return (JSON.parse(r.stdout) as { checks: { id: string; status: string }[] }).checks.filter((c) => c.status === 'fail').map((c) => c.id);
    } catch {
      return [`doctor printed no JSON (exit ${r.code}): ${r.stderr.slice(-300)}`];
    }
  };
  /** A message to alice through Postfix's port 25 (delivered by LMTP into her Maildir). */
  const send = async (subject: string): Promise<void> => {
    const msg = `From: <bob@remote.test>\r\nTo: <${ALICE}>\r\nSubject: ${subject}\r\nMessage-ID: <${subject}@remote.test>\r\n\r\n${subject}\r\n`;
    await until(`Postfix to take ${subject}`, async () => ((await ig.guest.run(['curl', '-sS', '--max-time', '30', 'smtp://127.0.0.1:25', '--mail-from', 'bob@remote.test', '--mail-rcpt', ALICE, '-T', '-'], { input: msg })).code === 0 ? true : undefined), 120_000);
  };
  /** Delivered (a file in the mail storage holds it) or still in Postfix's queue: never lost. */
  const deliveredOrQueued = async (subject: string): Promise<'delivered' | 'queued' | undefined> => {
    if ((await sh(ig.guest, `grep -rl 'Subject: ${subject}' /var/vmail 2>/dev/null | head -n 1`)).trim()) return 'delivered';
    const queued = (await sh(ig.guest, `grep -rla 'Subject: ${subject}' /var/spool/postfix/incoming /var/spool/postfix/active /var/spool/postfix/deferred /var/spool/postfix/hold 2>/dev/null | head -n 1`)).trim();
    return queued ? 'queued' : undefined;
  };
  const unitsActive = async (): Promise<string[]> => {
    const down: string[] = [];
    for (const u of UNITS) if ((await ig.guest.run(['systemctl', 'is-active', u])).stdout.trim() !== 'active') down.push(u);
    return down;
  };
  const run = async (op: Operation): Promise<number> => {
    await op.prepare(h);
    const t0 = Date.now();
    const r = await op.start(h).result;
    if (r.code !== 0) throw new Error(`${op.name} without a fault exited ${r.code}: ${r.stdout}${r.stderr}`);
    return Date.now() - t0;
  };

  beforeAll(async () => {
    ig = await installedGuest(lower, 'fault-matrix');
    h.bearer = ig.bearer;
    // No network: mail to other domains stays deferred; example.org's mail is delivered here.
    await sh(ig.guest, 'postconf -e "relayhost = [127.0.0.1]:2" && postfix reload');
    const d = await h.api('POST', '/domains', { name: DOMAIN, generate_dkim: true });
    if (d.status !== 201) throw new Error(`POST /domains: ${JSON.stringify(d)}`);
    const a = await h.api('POST', '/accounts', { address: ALICE, password: 'alice has a long password' });
    if (a.status !== 201) throw new Error(`POST /accounts: ${JSON.stringify(a)}`);
    // Each operation once without a fault: its duration places the fault points.
    for (const op of OPS) {
      h.tag = `m${OPS.indexOf(op)}`;
      durations.set(op.name, await run(op));
    }
    baselineFails = await doctorFails();
    console.log(`[fault-matrix] durations without a fault: ${JSON.stringify(Object.fromEntries(durations))}; doctor's failures before the cells: ${JSON.stringify(baselineFails)}`);
  }, 30 * 60_000);

  afterAll(async () => {
    await ig?.dispose();
  }, 180_000);

  for (const [i, cell] of CELLS.entries()) {
    it(`${cell.op} × ${cell.fault} (seed ${cell.seed})`, async () => {
      const op = OPS.find((o) => o.name === cell.op);
      const fault = FAULTS.find((f) => f.name === cell.fault);
      if (!op || !fault) throw new Error(`no such cell: ${JSON.stringify(cell)} (operations: ${OPS.map((o) => o.name).join(', ')}; faults: ${FAULTS.map((f) => f.name).join(', ')})`);
      h.tag = `c${i}s${cell.seed % 1000}`;
      const atMs = Math.floor(prng(cell.seed)() * (durations.get(op.name) ?? 1000));
      const ctx = { h, op, crashAndBoot: async () => void (await ig.crashAndBoot()) };
      const before = `before-${h.tag}`;
      await send(before);
      await op.prepare(h);
      await fault.before?.(ctx);
      const started = op.start(h);
      let during: Promise<void> = Promise.resolve();
      if (fault.during) {
        await Promise.race([sleep(atMs), started.result]);
        during = fault.during(ctx);
      }
      const result = await started.result;
      await during;
      await fault.after?.(ctx);
      if (fault.name === 'power-loss') await ig.healthy();

      // The daemons run (after at most their own restart) and each one's checker passes.
      const down = await until('every unit to be active', async () => {
        const d = await unitsActive();
        return d.length === 0 ? d : undefined;
      }, 120_000).catch(async () => unitsActive());
      expect(down, `units not active after ${cell.fault}`).toEqual([]);
      for (const [daemon, check] of Object.entries(CHECKERS)) {
        const r = await ig.guest.run(['sh', '-c', check], { timeoutMs: 120_000 });
        expect(r.code, `${daemon}: ${check}\n${r.stdout}${r.stderr}`).toBe(0);
      }
      // Old state or new, never a mix; a success reported means the new state.
      const afterFault = await op.state(h);
      const partial = afterFault.startsWith('partial: ');
      expect(afterFault === 'old' || afterFault === 'new' || (partial && result.code !== 0), `after the fault: ${afterFault} (operation exited ${result.code})`).toBe(true);
      if (result.code === 0) expect(afterFault, `${op.name} exited 0 but the host is not in its new state`).toBe('new');
      // Mail sent before the fault and after it: both delivered (never lost).
      const after = `after-${h.tag}`;
      await send(after);
      await sh(ig.guest, 'postqueue -f || true');
      const mail: string[] = [];
      for (const s of [before, after]) mail.push(await until(`${s} to be delivered or queued`, () => deliveredOrQueued(s), 180_000));
      // Run again: completes, and the host is as if no fault had happened.
      const again = await op.again(h);
      expect([0, ...(op.doneCodes ?? [])], `${op.name} again exited ${again.code}: ${again.stdout}${again.stderr}`).toContain(again.code);
      expect(await op.state(h)).toBe('new');
      const fails = (await doctorFails()).filter((f) => !baselineFails.includes(f));
      expect(fails, 'doctor failures the cell left').toEqual([]);
      console.log(`[fault-matrix] ${op.name} × ${fault.name} (seed ${cell.seed}, at ${atMs} ms) → held: operation exited ${result.code}, ${afterFault} state after the fault, mail before/after ${mail.join('/')}, run again exited ${again.code}`);
    }, 15 * 60_000);
  }
});
