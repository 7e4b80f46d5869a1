/**
 * The fault matrix (docs/reliability.md): operations mailsvc runs on a live host, each run the way an
 * administrator runs it (CLI as root, the API), with one fault injected at a seeded point of its run; then the
 * test itself, not the product, checks what is left: every daemon's own checker passes and the daemons run,
 * mail sent before and after the fault is delivered, the database and the files agree (old state or new, never
 * a mix), the operation did not claim success for what did not happen, running it again completes, and
 * `mailsvc doctor` has no failure the cell did not start with.
 *
 * A cell is (operation, fault, seed). The seed picks the point of the run where the fault lands (a fraction of
 * the operation's duration, measured once per operation on this guest before the faults). The same seed gives
 * the same cell: a failing cell replays with MAILSVC_FAULT_CELLS=<op>:<fault>:<seed>.
 */
import type { Guest, RunResult } from './nspawn.js';

/** mulberry32: a small seeded generator, so a cell's choices replay from its seed alone. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What an operation needs from the harness. */
export type Host = {
  guest: Guest;
  bearer: string;
  /** A name unique to this cell (domains, accounts, subjects). */
  tag: string;
  /** Re-reads the bearer after a reboot or a restart of the service (its tokens survive: they are in the database). */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
};

/** A run of an operation: the process doing the work is started, its result comes later. */
export type Started = { result: Promise<RunResult> };

/**
 * One operation. `prepare` makes the cell's starting state and returns what `state` compares against;
 * `start` runs the operation once; `state` reads the host (the test's own reading: files, daemons, database
 * through the CLI) and says 'old', 'new', or describes a mix; `daemon` is the unit a daemon fault stops.
 */
export type Operation = {
  name: string;
  /** How the administrator runs it. */
  via: string;
  daemon: string;
  prepare(h: Host): Promise<void>;
  start(h: Host): Started;
  /** 'old', 'new', 'partial: …' (consistent, between the operation's steps: allowed when it did not claim success), or a mix. */
  state(h: Host): Promise<'old' | 'new' | string>;
  /** The operation again, after the fault: must exit 0 (or say it is already done) and leave 'new'. */
  again(h: Host): Promise<RunResult>;
  /** Exit codes of `again` that mean "done already" (e.g. 3: the domain exists). */
  doneCodes?: number[];
};

/** Runs `script` in the guest under sh, its PID in /run/fault-op.pid first: the process a SIGKILL fault hits. */
export function startTracked(g: Guest, script: string, input?: string): Started {
  const wrapped = `echo $$ > /run/fault-op.pid; exec ${script}`;
  return { result: g.run(['sh', '-c', wrapped], { input, timeoutMs: 600_000 }) };
}

export const sh = async (g: Guest, script: string): Promise<string> => (await g.run(['sh', '-c', script], { timeoutMs: 120_000 })).stdout;

/** Every daemon's own checker on its live configuration (the test's check, not mailsvc's). */
export const CHECKERS: Record<string, string> = {
  postfix: 'postfix check',
  dovecot: 'doveconf -n >/dev/null',
  rspamd: 'rspamadm configtest',
  fail2ban: 'fail2ban-client -t',
  nftables: 'nft list ruleset > /run/fault-ruleset.nft && nft -c -f /run/fault-ruleset.nft',
};

/** The units that must run after each cell (after at most their own restart). */
export const UNITS = ['postfix', 'dovecot', 'rspamd', 'fail2ban', 'mailsvc'];

export type FaultContext = {
  h: Host;
  op: Operation;
  /** Boots the guest again after a crash (power loss); the harness replaces h.guest. */
  crashAndBoot(): Promise<void>;
};

/**
 * One fault. `before` runs before the operation starts; `during` at the seeded point of its run (the
 * operation's result may still be pending); `after` once the operation's result is in (or the crash is over),
 * to put back what the fault took (a daemon stopped by the fault is started again, as the administrator would).
 */
export type Fault = {
  name: string;
  what: string;
  before?(f: FaultContext): Promise<void>;
  during?(f: FaultContext): Promise<void>;
  after?(f: FaultContext): Promise<void>;
};

const stopDaemon = async ({ h, op }: FaultContext): Promise<void> => void (await sh(h.guest, `systemctl stop ${op.daemon}`));
const startDaemon = async ({ h, op }: FaultContext): Promise<void> => void (await sh(h.guest, `systemctl start ${op.daemon}`));

export const FAULTS: Fault[] = [
  {
    name: 'sigkill-cli',
    what: 'SIGKILL of the process doing the work (the CLI, or the service for an API call)',
    async during({ h, op }) {
      if (op.via === 'api') await sh(h.guest, 'systemctl kill -s KILL mailsvc.service');
      else await sh(h.guest, 'kill -KILL "$(cat /run/fault-op.pid)" 2>/dev/null || true');
    },
  },
  {
    name: 'helper-restart',
    what: 'the root helper restarted mid-operation',
    async during({ h }) {
      await sh(h.guest, 'systemctl restart mailsvc-helper.service || true');
    },
  },
  {
    name: 'power-loss',
    what: 'the whole guest killed (every process at once) and booted again',
    async during({ crashAndBoot }) {
      await crashAndBoot();
    },
  },
  { name: 'daemon-stopped', what: "the operation's daemon stopped before it starts (started again after)", before: stopDaemon, after: startDaemon },
  { name: 'daemon-stopped-during', what: "the operation's daemon stopped at the seeded point (started again after)", during: stopDaemon, after: startDaemon },
];

const MIB = 1024 * 1024;

/** The operations of the matrix (docs/reliability.md lists which are covered so far). */
export function operations(): Operation[] {
  const sizes = { cli: { was: 0, want: 0 }, api: { was: 0, want: 0 } };
  let backupsSince = 0;
  let firewallWant = false;
  const domainOf = (h: Host): string => `f${h.tag}.example.net`;
  const addrOf = (h: Host): string => `u${h.tag}@example.org`;
  let oldPassword = '';
  let newPassword = '';
  /** PATCH /admin/limits with the wanted size, then POST /admin/limits/apply: exit 0 when both answered 200. */
  const applyLimitsViaApi = async (h: Host): Promise<RunResult> => {
    const patch = await h.api('PATCH', '/admin/limits', { 'message-size-limit': `${sizes.api.want / MIB}M` });
    const applied = patch.status === 200 ? await h.api('POST', '/admin/limits/apply') : patch;
    return { code: applied.status === 200 ? 0 : 1, stdout: JSON.stringify(applied), stderr: '' };
  };
  return [
    {
      name: 'limits-apply',
      via: 'cli',
      daemon: 'postfix',
      async prepare(h) {
        const s = sizes.cli;
        s.was = Number((await sh(h.guest, 'postconf -h message_size_limit')).trim());
        s.want = s.was === 40 * MIB ? 41 * MIB : 40 * MIB;
        const r = await h.guest.run(['mailsvc', 'limits', 'set', 'message-size-limit', `${s.want / MIB}M`]);
        if (r.code !== 0) throw new Error(`limits set: ${r.stderr}`);
      },
      start: (h) => startTracked(h.guest, 'mailsvc limits apply --json'),
      state: (h) => sizeState(h, sizes.cli),
      again: (h) => h.guest.run(['mailsvc', 'limits', 'apply', '--json'], { timeoutMs: 300_000 }),
    },
    {
      name: 'domain-create',
      via: 'cli',
      daemon: 'rspamd',
      async prepare() {},
      start: (h) => startTracked(h.guest, `mailsvc add domain ${domainOf(h)} --generate-dkim --json`),
      state: (h) => domainState(h, domainOf(h), 'create'),
      again: (h) => h.guest.run(['mailsvc', 'add', 'domain', domainOf(h), '--generate-dkim', '--json'], { timeoutMs: 300_000 }),
      doneCodes: [3],
    },
    {
      name: 'domain-delete',
      via: 'cli',
      daemon: 'rspamd',
      async prepare(h) {
        const r = await h.guest.run(['mailsvc', 'add', 'domain', domainOf(h), '--generate-dkim', '--json'], { timeoutMs: 300_000 });
        if (r.code !== 0) throw new Error(`add domain: ${r.stdout}${r.stderr}`);
      },
      start: (h) => startTracked(h.guest, `mailsvc domains delete ${domainOf(h)} --json`),
      state: (h) => domainState(h, domainOf(h), 'delete'),
      again: (h) => h.guest.run(['mailsvc', 'domains', 'delete', domainOf(h), '--json'], { timeoutMs: 300_000 }),
      doneCodes: [4],
    },
    {
      name: 'account-passwd',
      via: 'cli',
      daemon: 'dovecot',
      async prepare(h) {
        oldPassword = `old password ${h.tag} long`;
        newPassword = `new password ${h.tag} long`;
        const r = await h.guest.run(['mailsvc', 'accounts', 'add', addrOf(h), '--password-stdin'], { input: `${oldPassword}\n` });
        if (r.code !== 0) throw new Error(`accounts add: ${r.stdout}${r.stderr}`);
      },
      start: (h) => startTracked(h.guest, `mailsvc accounts passwd ${addrOf(h)} --password-stdin`, `${newPassword}\n`),
      async state(h) {
        // The hook decides every login: exactly one of the two passwords opens the mailbox.
        const [o, n] = [await imapLogin(h, addrOf(h), oldPassword), await imapLogin(h, addrOf(h), newPassword)];
        return n && !o ? 'new' : o && !n ? 'old' : `old password ${o ? 'works' : 'refused'}, new password ${n ? 'works' : 'refused'}`;
      },
      again: (h) => h.guest.run(['mailsvc', 'accounts', 'passwd', addrOf(h), '--password-stdin'], { input: `${newPassword}\n`, timeoutMs: 300_000 }),
    },
    {
      name: 'limits-api',
      via: 'api',
      daemon: 'postfix',
      async prepare(h) {
        const s = sizes.api;
        s.was = Number((await sh(h.guest, 'postconf -h message_size_limit')).trim());
        s.want = s.was === 30 * MIB ? 31 * MIB : 30 * MIB;
      },
      start: (h) => ({ result: applyLimitsViaApi(h) }),
      state: (h) => sizeState(h, sizes.api),
      again: (h) => applyLimitsViaApi(h),
    },
    {
      name: 'backup-run',
      via: 'cli',
      daemon: 'postfix',
      async prepare() {
        backupsSince = Date.now();
      },
      start: (h) => startTracked(h.guest, 'mailsvc backup run --json'),
      async state(h) {
        // Complete backups only are listed, an interrupted one never is, and verify passes on the newest chain.
        const list = await h.guest.run(['mailsvc', 'backup', 'list', '--json']);
        if (list.code !== 0) return `backup list exited ${list.code}: ${list.stderr.trim()}`;
        const newest = Math.max(0, ...(JSON.parse(list.stdout) as Record<string, unknown>[]).flatMap((b) => Object.entries(b).filter(([k, v]) => k.endsWith('_at') && typeof v === 'string').map(([, v]) => Date.parse(v as string) || 0)));
        const verify = await h.guest.run(['mailsvc', 'backup', 'verify', '--json'], { timeoutMs: 300_000 });
        if (newest > 0 && verify.code !== 0) return `backup verify exited ${verify.code}: ${(verify.stdout + verify.stderr).slice(-400)}`;
        // Clocks: the guest's is the host's (a container), so the cell's start compares with the backup's times.
        return newest >= backupsSince - 1000 ? 'new' : 'old';
      },
      again: (h) => h.guest.run(['mailsvc', 'backup', 'run', '--json'], { timeoutMs: 600_000 }),
    },
    {
      name: 'account-delete',
      via: 'cli',
      daemon: 'dovecot',
      async prepare(h) {
        oldPassword = `a password ${h.tag} long`;
        const r = await h.guest.run(['mailsvc', 'accounts', 'add', addrOf(h), '--password-stdin'], { input: `${oldPassword}\n` });
        if (r.code !== 0) throw new Error(`accounts add: ${r.stdout}${r.stderr}`);
      },
      start: (h) => startTracked(h.guest, `mailsvc accounts delete ${addrOf(h)} --yes --json`),
      async state(h) {
        // Gone from the database and refused by Dovecot (the hook), or both still there.
        const inDb = (await h.guest.run(['mailsvc', 'accounts', 'show', addrOf(h), '--json'])).code === 0;
        const logs = await imapLogin(h, addrOf(h), oldPassword);
        return !inDb && !logs ? 'new' : inDb && logs ? 'old' : `the database ${inDb ? 'has' : 'lacks'} the account, its password ${logs ? 'still logs in' : 'is refused'}`;
      },
      again: (h) => h.guest.run(['mailsvc', 'accounts', 'delete', addrOf(h), '--yes', '--json'], { timeoutMs: 300_000 }),
      doneCodes: [4],
    },
    {
      name: 'firewall-apply',
      via: 'cli',
      daemon: 'nftables',
      async prepare(h) {
        firewallWant = !firewallWant;
        // On, with the base rule (SSH, mail and web from anywhere) once; the cells add or take away a second rule.
        const on = await h.guest.run(['mailsvc', 'firewall', 'set', 'firewall-rules-json', JSON.stringify(firewallRules(!firewallWant)), '--json'], { timeoutMs: 120_000 });
        const enabled = await h.guest.run(['mailsvc', 'firewall', 'set', 'firewall-enabled', 'yes', '--json'], { timeoutMs: 120_000 });
        if (on.code !== 0 || enabled.code !== 0) throw new Error(`firewall set: ${on.stdout}${on.stderr}${enabled.stdout}${enabled.stderr}`);
      },
      start: (h) => startTracked(h.guest, `mailsvc firewall set firewall-rules-json '${JSON.stringify(firewallRules(firewallWant))}' --json`),
      async state(h) {
        // The stored rules (firewall show) and the live table (nft) hold the second rule both, or neither.
        const shown = await h.guest.run(['mailsvc', 'firewall', 'show', '--json']);
        const stored = shown.stdout.includes(EXTRA_SOURCE);
        const live = (await h.guest.run(['nft', 'list', 'table', 'inet', 'mailsvc'])).stdout.includes(EXTRA_SOURCE);
        if (stored !== live) return `stored rules ${stored ? 'have' : 'lack'} ${EXTRA_SOURCE}, the live table ${live ? 'has' : 'lacks'} it`;
        return stored === firewallWant ? 'new' : 'old';
      },
      again: (h) => h.guest.run(['mailsvc', 'firewall', 'set', 'firewall-rules-json', JSON.stringify(firewallRules(firewallWant)), '--json'], { timeoutMs: 300_000 }),
    },
  ];
}

/** The firewall's rules: SSH, mail and web from anywhere, and with `extra` IMAP from EXTRA_SOURCE too. */
const EXTRA_SOURCE = '192.0.2.0/24';
const firewallRules = (extra: boolean): Record<string, string>[] => [
  { ports: 'ssh mail web', protocol: 'tcp', source: '', enabled: 'yes' },
  ...(extra ? [{ ports: '143', protocol: 'tcp', source: EXTRA_SOURCE, enabled: 'yes' }] : []),
];

/** Whether Dovecot (through mailsvc's hook) lets `address` in with `password` over IMAP. */
const imapLogin = async (h: Host, address: string, password: string): Promise<boolean> => (await h.guest.run(['curl', '-sS', '--max-time', '30', 'imap://127.0.0.1/', '-u', `${address}:${password}`])).code === 0;

/** Postfix's message_size_limit: what it was, what it should become, or neither. */
async function sizeState(h: Host, s: { was: number; want: number }): Promise<string> {
  const now = Number((await sh(h.guest, 'postconf -h message_size_limit')).trim());
  return now === s.want ? 'new' : now === s.was ? 'old' : `message_size_limit ${now}, neither ${s.was} nor ${s.want}`;
}

/**
 * A domain and its DKIM signing agree: in the database (mailsvc domains show) with stored keys (dns keys), its
 * key file in /etc/rspamd/dkim and a signing entry in dkim_signing.conf; or absent from all of them (key files of a
 * deleted domain's retired keys may stay). A domain in the database with no keys and nothing signing for it is
 * consistent too (`partial`): an `add domain --generate-dkim` that stopped between its steps, which running it
 * again completes.
 */
async function domainState(h: Host, domain: string, kind: 'create' | 'delete'): Promise<string> {
  const inDb = (await h.guest.run(['mailsvc', 'domains', 'show', domain, '--json'])).code === 0;
  const keys = inDb ? await h.guest.run(['mailsvc', 'dns', 'keys', domain, '--json']) : { code: 0, stdout: '[]', stderr: '' };
  const stored = keys.code === 0 ? (JSON.parse(keys.stdout) as unknown[]).length : -1;
  const files = Number((await sh(h.guest, `ls /etc/rspamd/dkim/ 2>/dev/null | grep -c '^${domain.replace(/\./g, '\\.')}\\.' || true`)).trim());
  const signs = Number((await sh(h.guest, `grep -c '${domain}' /etc/rspamd/local.d/dkim_signing.conf 2>/dev/null || true`)).trim()) > 0;
  if (inDb && stored > 0 && files > 0 && signs) return kind === 'create' ? 'new' : 'old';
  if (!inDb && !signs) return kind === 'create' ? 'old' : 'new';
  if (kind === 'create' && inDb && stored === 0 && files === 0 && !signs) return 'partial: the domain without keys, nothing signing for it';
  return `database ${inDb ? 'has' : 'lacks'} ${domain} with ${stored} stored keys, key files: ${files}, dkim_signing.conf ${signs ? 'signs' : 'does not sign'} it`;
}

export type Cell = { op: string; fault: string; seed: number };

/**
 * The cells to run: MAILSVC_FAULT_CELLS (op:fault:seed,…) replays given cells; MAILSVC_FAULT_MATRIX=full runs
 * every operation with every fault; otherwise a seeded sample where every operation and every fault occurs at
 * least once (the CI sample).
 */
export function pickCells(ops: string[], faults: string[], env: NodeJS.ProcessEnv): Cell[] {
  const base = Number(env.MAILSVC_FAULT_SEED ?? 20261129);
  const seedOf = (op: string, fault: string): number => {
    let x = base;
    for (const c of `${op}:${fault}`) x = (Math.imul(x, 31) + c.charCodeAt(0)) >>> 0;
    return x;
  };
  if (env.MAILSVC_FAULT_CELLS) {
    return env.MAILSVC_FAULT_CELLS.split(',').map((s) => {
      const [op = '', fault = '', seed = ''] = s.split(':');
      return { op, fault, seed: Number(seed) };
    });
  }
  if (env.MAILSVC_FAULT_MATRIX === 'full') return ops.flatMap((op) => faults.map((fault) => ({ op, fault, seed: seedOf(op, fault) })));
  const rnd = prng(base);
  const shift = Math.floor(rnd() * faults.length);
  const n = Math.max(ops.length, faults.length);
  const cells: Cell[] = [];
  for (let i = 0; i < n; i++) {
    const op = ops[i % ops.length] as string;
    const fault = faults[(i + shift) % faults.length] as string;
    cells.push({ op, fault, seed: seedOf(op, fault) });
  }
  return cells;
}
