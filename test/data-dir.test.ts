import { chmodSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSettings } from '../src/config/settings.js';
import { createContext } from './helpers/context.js';

const mode = (path: string): string => (statSync(path).mode & 0o777).toString(8).padStart(4, '0');

/** Starts the service on the data dir, writes once, and reads the modes while it runs (SQLite removes -wal at close). */
async function start(dataDir: string, domain: string): Promise<{ warnings: string[]; modes: Record<string, string> }> {
  const lines: string[] = [];
  const modes: Record<string, string> = {};
  const sink = new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString()), cb()) });
  const ctx = await createContext(loadSettings({ MAILSVC_DATA_DIR: dataDir }), { log: pino({ level: 'warn' }, sink) });
  try {
    // A write, so SQLite makes its -wal and -shm files.
    await ctx.domains.create(domain);
    for (const f of ['.', 'mailsvc.db', 'mailsvc.db-wal', 'mailsvc.db-shm', 'secret.key']) {
      expect(existsSync(join(dataDir, f)), f).toBe(true);
      modes[f] = mode(join(dataDir, f));
    }
  } finally {
    await ctx.close();
  }
  return { warnings: lines.filter((l) => l.includes('too open')), modes };
}

describe('file modes of the data directory', () => {
  let root = '';
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('the service makes the data directory 0750, the database and its -wal/-shm 0640, the key 0600, and warns about nothing', async () => {
    root = mkdtempSync(join(tmpdir(), 'mailsvc-modes-'));
    const dir = join(root, 'data');
    const { warnings, modes } = await start(dir, 'example.org');
    expect(modes).toEqual({ '.': '0750', 'mailsvc.db': '0640', 'mailsvc.db-wal': '0640', 'mailsvc.db-shm': '0640', 'secret.key': '0600' });
    expect(warnings).toEqual([]);
  });

  it('a start with files others can read warns once per file (the -wal/-shm follow the database), naming it and the chmod to run', async () => {
    root = mkdtempSync(join(tmpdir(), 'mailsvc-modes-'));
    const dir = join(root, 'data');
    await start(dir, 'example.org');
    chmodSync(dir, 0o755);
    chmodSync(join(dir, 'mailsvc.db'), 0o644);
    const { warnings } = await start(dir, 'example.net');
    // SQLite gives -wal and -shm the database's mode, so they are named too.
    expect(warnings.map((w) => /too open: (\S+) is mode/.exec(w)?.[1]).sort()).toEqual([dir, ...['mailsvc.db', 'mailsvc.db-shm', 'mailsvc.db-wal'].map((f) => join(dir, f))].sort());
    expect(warnings.join('\n')).toContain(`${dir} is mode 0755; at most 0770 (chmod 750 ${dir})`);
    expect(warnings.join('\n')).toContain(`${join(dir, 'mailsvc.db')} is mode 0644; at most 0660 (chmod 640 ${join(dir, 'mailsvc.db')})`);
  });
});
