import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DIALECTS, createTestDatabase, dialectAvailable } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { buildProgram } from '../../cli/program.js';

/** The example module of docs/architecture.md: its routes, its audit records and its part in deleting a domain, on every dialect. */
for (const dialect of DIALECTS) {
  describe(`notes about a domain (${dialect})`, async () => {
    const available = await dialectAvailable(dialect);
    let db: TestDatabase;
    let t: TestApp;
    const call = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: object) =>
      t.app.inject({ method, url, headers: { authorization: t.basic() }, ...(body ? { payload: body } : {}) });
    beforeAll(async () => {
      if (!available) return;
      db = await createTestDatabase(dialect);
      t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no' });
      expect((await call('POST', '/domains', { name: 'example.org' })).statusCode).toBe(201);
    });
    afterAll(async () => {
      await t?.close();
      await db?.drop();
    });

    it.skipIf(!available)('its migration was found and run with the others: it is the schema /health/details reports', async () => {
      expect((await call('GET', '/health/details')).json()).toMatchObject({ database: { schema_version: '0030_domain_notes', schema_latest: '0030_domain_notes' } });
    });

    it.skipIf(!available)('notes are added with the id the database gave them, listed, and deleted; bad input is a 4xx naming it', async () => {
      const first = await call('POST', '/domains/example.org/notes', { text: 'MX moves on Friday' });
      const second = await call('POST', '/domains/example.org/notes', { text: 'ask Bob before' });
      expect([first.statusCode, second.statusCode]).toEqual([201, 201]);
      const [a, b] = [first.json<{ id: number }>().id, second.json<{ id: number }>().id];
      expect(b).toBeGreaterThan(a);
      expect((await call('GET', '/domains/example.org/notes')).json()).toMatchObject([{ id: a, domain: 'example.org', text: 'MX moves on Friday' }, { id: b, text: 'ask Bob before' }]);
      expect((await call('DELETE', `/domains/example.org/notes/${a}`)).statusCode).toBe(204);
      expect((await call('DELETE', `/domains/example.org/notes/${a}`)).statusCode).toBe(404);
      // A path parameter is text with a pattern: a word is a 422 naming it, never a 500.
      expect((await call('DELETE', '/domains/example.org/notes/first')).json()).toMatchObject({ errors: [{ path: 'params.id' }] });
      expect((await call('POST', '/domains/example.org/notes', { text: 'x', colour: 'red' })).statusCode).toBe(422);
      expect((await call('POST', '/domains/nowhere.example/notes', { text: 'x' })).statusCode).toBe(404);
      expect((await call('GET', '/domains/example.org/notes')).json()).toMatchObject([{ id: b }]);
    });

    it.skipIf(!available)('a change is in the audit log, recorded for it by http/', async () => {
      const page = (await call('GET', `/admin/audit?action=${encodeURIComponent('POST /domains/:domain/notes')}`)).json<{ total: number; items: { target: string; result: string }[] }>();
      expect(page.items.map((i) => [i.target, i.result])).toEqual([['nowhere.example', 'not_found'], ['example.org', 'validation'], ['example.org', 'ok'], ['example.org', 'ok']]);
    });

    it.skipIf(!available)('deleting the domain deletes its notes in the same transaction (domain.deleting)', async () => {
      await call('POST', '/domains', { name: 'gone.example' });
      await call('POST', '/domains/gone.example/notes', { text: 'to go with it' });
      const id = (await call('GET', '/domains/gone.example')).json<{ id: number }>().id;
      expect((await call('DELETE', '/domains/gone.example')).statusCode).toBe(204);
      expect(await t.ctx.db.selectFrom('domain_notes').select('id').where('domain_id', '=', id).execute()).toEqual([]);
      // The other domain's notes stay.
      expect((await call('GET', '/domains/example.org/notes')).json()).toHaveLength(1);
    });
  });
}

describe('notes on the command line (SQLite)', () => {
  let dir: string;
  const saved = { ...process.env };
  /** Runs `mailsvc <args>` in this process, as bin.ts does; returns what it printed. */
  async function mailsvc(...args: string[]): Promise<string> {
    const out: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out.push(String(chunk));
      return true;
    });
    try {
      const program = await buildProgram();
      program.exitOverride();
      await program.parseAsync(['node', 'mailsvc', ...args]);
    } finally {
      write.mockRestore();
    }
    return out.join('');
  }
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-notes-cli-'));
    process.env.MAILSVC_DATA_DIR = dir;
    process.env.MAILSVC_CONFIG_FILE = join(dir, 'none.conf');
    process.env.MAILSVC_LOG_LEVEL = 'warn';
  });
  afterAll(() => {
    process.env = saved;
    rmSync(dir, { recursive: true, force: true });
  });

  it('adds, lists and deletes notes; a change is recorded in the audit log (commands are audited unless marked), a list is not', async () => {
    expect(JSON.parse(await mailsvc('db', 'migrate', '--json'))).toMatchObject({ schema_version: '0030_domain_notes' });
    await mailsvc('add', 'domain', 'example.org');
    const note = JSON.parse(await mailsvc('notes', 'add', 'example.org', 'renew the certificate', '--json')) as { id: number };
    expect(await mailsvc('notes', 'list', 'example.org')).toMatch(new RegExp(`^${note.id} .* renew the certificate\\n$`));
    expect(await mailsvc('notes', 'delete', 'example.org', String(note.id))).toBe(`Note ${note.id} deleted.\n`);
    const audit = JSON.parse(await mailsvc('audit', 'list', '--json')) as { action: string; target: string }[];
    expect(audit.map((a) => [a.action, a.target])).toEqual([
      ['cli: notes delete', 'example.org'],
      ['cli: notes add', 'example.org'],
      ['cli: add domain', 'example.org'],
    ]);
  });
});
