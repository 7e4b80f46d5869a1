import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, chownSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pino from 'pino';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { startMapServer } from './map-server.js';
import type { MapServer } from './map-server.js';
import { POSTFIX_MAPS } from './postfix-maps.js';
import type { PostfixMapName } from './postfix-maps.js';

const postmapMissing = spawnSync('postmap', ['-q', 'x', 'static:y'], { encoding: 'utf8' }).error ? 'postmap (package postfix) is not installed' : null;
if (postmapMissing) skipNotice('Postfix (postmap)', postmapMissing);
const asRoot = process.getuid?.() === 0;
if (!asRoot) console.warn('[skip] postfix-maps: the check as the user postfix needs root (setpriv); it is skipped');
const execFileP = promisify(execFile);
const passwdLine = (user: string) => readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${user}:`))?.split(':');
const postfixUser = passwdLine('postfix');

// postmap reads a main.cf: a minimal one of our own (the machine's Postfix may have none).
const configDir = mkdtempSync(join(tmpdir(), 'mailsvc-postmap-'));
writeFileSync(join(configDir, 'main.cf'), 'compatibility_level = 3.6\n');
chmodSync(configDir, 0o755);
afterAll(() => rmSync(configDir, { recursive: true, force: true }));
const sqliteTables = spawnSync('postconf', ['-c', configDir, '-m'], { encoding: 'utf8' }).stdout?.split('\n').includes('sqlite') ?? false;
if (!postmapMissing && !sqliteTables) skipNotice("Postfix's sqlite tables (package postfix-sqlite)", 'postconf -m does not list sqlite');

/** What real Postfix gets from a table: `postmap -q` is Postfix's own client for any table type. */
// Asynchronous: the map server answers from this process's event loop.
async function postmap(table: string, key: string, as?: { uid: number; gid: number }): Promise<{ found: string | null; error: string }> {
  const argv = ['-c', configDir, '-q', key, table];
  const [cmd, args] = as ? ['setpriv', [`--reuid=${as.uid}`, `--regid=${as.gid}`, '--clear-groups', 'postmap', ...argv]] : ['postmap', argv];
  const r = await execFileP(cmd, args, { encoding: 'utf8', timeout: 60_000 }).then(
    (ok) => ({ code: 0, stdout: ok.stdout, stderr: ok.stderr }),
    (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code ?? 1, stdout: err.stdout ?? '', stderr: err.stderr ?? '' }),
  );
  return { found: r.code === 0 ? r.stdout.trim() : null, error: r.stderr.trim() };
}

const DOMAIN_FILES: Record<PostfixMapName, string> = {
  domains: 'virtual-domains.cf',
  mailboxes: 'virtual-mailboxes.cf',
  'alias-mailboxes': 'virtual-alias-mailboxes.cf',
  aliases: 'virtual-aliases.cf',
  'sender-logins': 'sender-logins.cf',
};

// Every key asked of every table: mailboxes active and disabled, aliases, a catch-all, a domain switched off, strangers.
const KEYS = [
  'example.org', 'sleepy.example', 'other.example',
  'alice@example.org', 'bob@example.org', 'info@example.org', 'team@example.org', '@example.org', 'nobody@example.org',
  'off@example.org', 'dave@sleepy.example', 'sales@sleepy.example', 'ALICE@Example.ORG',
];

// What the tables answer for those keys (absent: NOTFOUND).
const EXPECTED: Record<PostfixMapName, Record<string, string>> = {
  domains: { 'example.org': 'example.org' },
  mailboxes: { 'alice@example.org': 'alice@example.org', 'ALICE@Example.ORG': 'alice@example.org' },
  'alias-mailboxes': { 'alice@example.org': 'alice@example.org', 'bob@example.org': 'bob@example.org', 'ALICE@Example.ORG': 'alice@example.org' },
  aliases: { 'info@example.org': 'alice@example.org,carol@elsewhere.example', '@example.org': 'alice@example.org' },
  'sender-logins': { 'alice@example.org': 'alice@example.org', 'info@example.org': 'alice@example.org,carol@elsewhere.example', '@example.org': 'alice@example.org', 'ALICE@Example.ORG': 'alice@example.org' },
};

for (const dialect of DIALECTS) {
  describe.skipIf(postmapMissing !== null)(`Postfix's lookup tables over socketmap, asked by postmap (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    let dir = '';
    let server: MapServer;
    const table = (name: string) => `socketmap:unix:${server.path ?? ''}:${name}`;

    beforeAll(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
      for (const d of ['example.org', 'sleepy.example']) await t.ctx.domains.create(d);
      await t.ctx.accounts.create({ address: 'alice@example.org', password: 'alice-primary-pw' });
      await t.ctx.accounts.create({ address: 'bob@example.org', password: 'bob-primary-pw' });
      await t.ctx.accounts.update('bob@example.org', { active: false });
      await t.ctx.accounts.create({ address: 'dave@sleepy.example', password: 'dave-primary-pw' });
      await t.ctx.aliases.create({ source: 'info@example.org', destinations: ['alice@example.org', 'carol@elsewhere.example'] });
      await t.ctx.aliases.create({ source: 'off@example.org', destinations: ['alice@example.org'], active: false });
      await t.ctx.aliases.create({ source: '@example.org', destinations: ['alice@example.org'] });
      await t.ctx.aliases.create({ source: 'sales@sleepy.example', destinations: ['dave@sleepy.example'] });
      await t.ctx.domains.setActive('sleepy.example', false);
      // As installed: a directory only its owner and the socket's group enter.
      dir = mkdtempSync(join(tmpdir(), 'mailsvc-maps-'));
      const group = postfixUser ? Number(postfixUser[3]) : null;
      if (asRoot && group !== null) chownSync(dir, -1, group);
      chmodSync(dir, 0o750);
      const routing = await t.ctx.modules.get('routing');
      server = await routing.startMapServer({ path: join(dir, 'maps'), socketGroup: asRoot ? group : null });
    }, 90_000);
    afterAll(async () => {
      await server?.close();
      await t?.close();
      await db?.drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it.skipIf(!available)('every table answers every key as deploy/postfix says, through real Postfix code', async () => {
      const got: Record<string, Record<string, string>> = {};
      for (const name of POSTFIX_MAPS) {
        got[name] = {};
        for (const key of KEYS) {
          const r = await postmap(table(name), key);
          expect(r.error, `${name} ${key}`).toBe('');
          if (r.found !== null) got[name][key] = name === 'aliases' || name === 'sender-logins' ? r.found.split(',').sort().join(',') : r.found;
        }
      }
      expect(got).toEqual(EXPECTED);
      expect(statSync(server.path ?? '').mode & 0o777).toBe(0o660);
    });

    it.skipIf(!available)('an unknown table is a permanent error, a lookup that fails is temporary (Postfix defers: 4xx), and neither answers data', async () => {
      const unknown = await postmap(table('passwords'), 'alice@example.org');
      expect(unknown.found).toBeNull();
      expect(unknown.error).toMatch(/passwords/);
      const failing = await startMapServer({ path: join(dir, 'failing'), socketGroup: null }, { lookup: () => Promise.reject(new Error('database is locked')) }, pino({ level: 'silent' }));
      try {
        const r = await postmap(`socketmap:unix:${failing.path ?? ''}:mailboxes`, 'alice@example.org');
        expect(r.found).toBeNull();
        expect(r.error).toMatch(/temporary|lookup failed/i);
        expect(r.error).not.toMatch(/database is locked/);
      } finally {
        await failing.close();
      }
    });

    // Against Postfix's own SQLite tables: only where the database is an SQLite file.
    if (dialect === 'sqlite') it.skipIf(!available || !sqliteTables)("the same answers as deploy/postfix/sqlite/*.cf, Postfix's own SQLite tables", async () => {
      const dbPath = db.url.replace(/^sqlite:(\/\/)?/, '');
      const cfDir = mkdtempSync(join(tmpdir(), 'mailsvc-cf-'));
      try {
        for (const name of POSTFIX_MAPS) {
          const cf = join(cfDir, DOMAIN_FILES[name]);
          writeFileSync(cf, readFileSync(join('deploy/postfix/sqlite', DOMAIN_FILES[name]), 'utf8').replace(/^dbpath = .*$/m, `dbpath = ${dbPath}`));
          for (const key of KEYS) {
            const viaSql = (await postmap(`sqlite:${cf}`, key)).found;
            const viaSocket = (await postmap(table(name), key)).found;
            const sorted = (v: string | null) => v?.split(',').sort().join(',') ?? null;
            expect(sorted(viaSocket), `${name} ${key}`).toBe(sorted(viaSql));
          }
        }
      } finally {
        rmSync(cfDir, { recursive: true, force: true });
      }
    });

    // Postfix's daemons drop every supplementary group when they start (set_ugid): a group shared
    // with mailsvc never lets them open the database; the socket, in a directory of their own group, does.
    if (dialect === 'sqlite') it.skipIf(!available || !sqliteTables || !asRoot || !postfixUser)('as the user postfix with no supplementary group: the database stays closed, the socket answers', async () => {
      const postfix = { uid: Number(postfixUser?.[2]), gid: Number(postfixUser?.[3]) };
      const dbPath = db.url.replace(/^sqlite:(\/\/)?/, '');
      chmodSync(dirname(dbPath), 0o700);
      const cf = join(dir, 'virtual-mailboxes.cf');
      writeFileSync(cf, readFileSync('deploy/postfix/sqlite/virtual-mailboxes.cf', 'utf8').replace(/^dbpath = .*$/m, `dbpath = ${dbPath}`));
      chmodSync(cf, 0o644);
      expect((await postmap(`sqlite:${cf}`, 'alice@example.org', postfix)).found).toBeNull();
      expect(await postmap(table('mailboxes'), 'alice@example.org', postfix)).toEqual({ found: 'alice@example.org', error: '' });
    });
  });
}
