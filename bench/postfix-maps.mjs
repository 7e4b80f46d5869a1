// Postfix's lookups at a provider's size: mailsvc's socketmap server (what install wires with SQLite, so
// Postfix never opens the database) against Postfix reading the same SQLite file itself through
// deploy/postfix/sqlite/*.cf (the anchor: what the tables cost before). Both are asked by Postfix's own
// client, `postmap -q -`, which opens the table once and looks up every key read from stdin, as a
// long-lived proxymap does. Not part of npm run bench; after npm run build:
//   npm run build && node bench/postfix-maps.mjs [--domains 100] [--accounts 100000] [--lookups 20000] [--rounds 3]
//
// The database: `domains` domains, `accounts` mailboxes spread over them, one alias per 10 mailboxes and
// a catch-all per domain. The keys: half existing mailboxes, half addresses that do not exist (a
// spammer's dictionary attack is mostly those), shuffled. Each round times the anchor and the socket
// over the same keys for `mailboxes` (virtual_mailbox_maps) and `aliases` (virtual_alias_maps), and
// checks that both printed the same answers. Prints lookups/s (median of the rounds) and the ratio.
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createDb } from '../dist/db/database.js';
import { migrateToLatest } from '../dist/app/schema.js';
import { startMapServer } from '../dist/modules/routing/map-server.js';
import { PostfixMaps } from '../dist/modules/routing/postfix-maps.js';

const { values: opt } = parseArgs({ options: { domains: { type: 'string', default: '100' }, accounts: { type: 'string', default: '100000' }, lookups: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '3' } } });
const DOMAINS = Number(opt.domains);
const ACCOUNTS = Number(opt.accounts);
const LOOKUPS = Number(opt.lookups);
const ROUNDS = Number(opt.rounds);
const say = (s) => process.stderr.write(`${s}\n`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const dir = mkdtempSync(join(tmpdir(), 'mailsvc-bench-maps-'));
chmodSync(dir, 0o755);
const dbPath = join(dir, 'mailsvc.db');
const db = createDb(`sqlite://${dbPath}`);
let server;
try {
  say(`seeding ${DOMAINS} domains, ${ACCOUNTS} mailboxes, ${ACCOUNTS / 10} aliases…`);
  await migrateToLatest(db);
  const now = Date.now();
  const noLimits = { send_rate_burst: 0, send_rate_per_minute: 0, send_rate_per_hour: 0, send_rate_per_day: 0, send_rate_per_week: 0, send_rate_per_month: 0 };
  const names = Array.from({ length: DOMAINS }, (_, i) => `d${i}.example`);
  await db.insertInto('domains').values(names.map((name) => ({ name, active: 1, created_at: now, updated_at: now }))).execute();
  const ids = new Map((await db.selectFrom('domains').select(['id', 'name']).execute()).map((r) => [r.name, r.id]));
  const address = (i) => `user${i}@${names[i % DOMAINS]}`;
  await db.transaction().execute(async (tx) => {
    for (let start = 0; start < ACCOUNTS; start += 500) {
      const rows = [];
      for (let i = start; i < Math.min(ACCOUNTS, start + 500); i++) {
        rows.push({ domain_id: ids.get(names[i % DOMAINS]), local_part: `user${i}`, address: address(i), display_name: '', password_hash: '{ARGON2ID}unused', require_app_password: 0, quota_bytes: 0, active: 1, ...noLimits, created_at: now, updated_at: now });
      }
      await tx.insertInto('accounts').values(rows).execute();
    }
    const aliases = [];
    for (let i = 0; i < ACCOUNTS; i += 10) aliases.push({ domain_id: ids.get(names[i % DOMAINS]), source: `alias${i}@${names[i % DOMAINS]}`, destination: address(i), active: 1, created_at: now, updated_at: now });
    for (const n of names) aliases.push({ domain_id: ids.get(n), source: `@${n}`, destination: `postmaster@${n}`, active: 1, created_at: now, updated_at: now });
    for (let start = 0; start < aliases.length; start += 500) await tx.insertInto('aliases').values(aliases.slice(start, start + 500)).execute();
  });

  // The keys, the same for every run: half found, half not, shuffled (a fixed seed).
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const keys = [];
  for (let i = 0; i < LOOKUPS; i++) {
    const n = Math.floor(rand() * ACCOUNTS);
    keys.push(i % 2 === 0 ? (i % 4 === 0 ? address(n) : `alias${n - (n % 10)}@${names[(n - (n % 10)) % DOMAINS]}`) : `nobody${n}@${names[n % DOMAINS]}`);
  }
  const keysFile = join(dir, 'keys');
  writeFileSync(keysFile, `${keys.join('\n')}\n`);

  // Postfix's configuration for postmap, and the anchor's tables.
  writeFileSync(join(dir, 'main.cf'), 'compatibility_level = 3.6\n');
  const cf = (name) => {
    const path = join(dir, name);
    writeFileSync(path, readFileSync(join('deploy/postfix/sqlite', name), 'utf8').replace(/^dbpath = .*$/m, `dbpath = ${dbPath}`));
    return path;
  };
  const tables = {
    mailboxes: { anchor: `sqlite:${cf('virtual-mailboxes.cf')}`, socket: 'mailboxes' },
    aliases: { anchor: `sqlite:${cf('virtual-aliases.cf')}`, socket: 'aliases' },
  };
  server = await startMapServer({ path: join(dir, 'maps'), socketGroup: null }, new PostfixMaps(db), pino({ level: 'warn' }));

  /** `postmap -q -` over the keys file: its output and seconds. */
  const postmap = (table) =>
    new Promise((resolve, reject) => {
      const started = performance.now();
      const child = spawn('postmap', ['-c', dir, '-q', '-', table], { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      child.once('exit', (code) => (code === 0 || code === 1 ? resolve({ out, seconds: (performance.now() - started) / 1000 }) : reject(new Error(`postmap ${table} exited ${code}: ${err}`))));
      child.stdin.end(readFileSync(keysFile));
    });
  const sorted = (out) => out.split('\n').filter(Boolean).map((l) => l.replace(/\t(.*)$/, (_m, v) => `\t${v.split(',').sort().join(',')}`)).sort().join('\n');

  const rows = [];
  for (const [name, t] of Object.entries(tables)) {
    const anchor = [];
    const socket = [];
    let found = 0;
    for (let r = 0; r < ROUNDS; r++) {
      say(`${name}: round ${r + 1} of ${ROUNDS}`);
      const a = await postmap(t.anchor);
      const s = await postmap(`socketmap:unix:${server.path}:${t.socket}`);
      if (sorted(a.out) !== sorted(s.out)) throw new Error(`${name}: the socket's answers differ from the SQLite table's`);
      found = s.out.split('\n').filter(Boolean).length;
      anchor.push(LOOKUPS / a.seconds);
      socket.push(LOOKUPS / s.seconds);
    }
    rows.push({ table: name, found, anchor: median(anchor), socket: median(socket) });
  }
  const machine = `${process.version}, ${(await import('node:os')).cpus().length} cores`;
  console.log(`Postfix lookups, ${ACCOUNTS} mailboxes in ${DOMAINS} domains, ${LOOKUPS} keys per run (half unknown), median of ${ROUNDS} (${machine}):`);
  console.log('| table | found | Postfix reads SQLite (anchor), lookups/s | mailsvc socketmap, lookups/s | socket / anchor |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.table} | ${r.found} | ${Math.round(r.anchor)} | ${Math.round(r.socket)} | ${(r.socket / r.anchor).toFixed(2)} |`);
} finally {
  await server?.close();
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
}
