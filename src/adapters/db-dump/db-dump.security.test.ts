import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DumpToolError, dumpDatabase } from './index.js';

/** Stand-ins for pg_dump and mariadb-dump that record their argv and the password variable, then exit as told. */
function fakeTool(dir: string, name: string, exit: number): void {
  const p = join(dir, name);
  writeFileSync(p, `#!/bin/sh\nprintf '%s\\n' "$@" > "${dir}/${name}.argv"\nprintf '%s' "$PGPASSWORD$MYSQL_PWD" > "${dir}/${name}.pw"\necho "${name}: simulated failure" >&2\nexit ${exit}\n`);
  chmodSync(p, 0o755);
}

describe('db-dump: passwords never in argv; a failing tool is an error', () => {
  let dir: string;
  let path: string | undefined;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'mailsvc-dbdump-'));
    path = process.env.PATH;
    process.env.PATH = `${dir}:${path ?? ''}`;
  });
  afterEach(() => {
    process.env.PATH = path;
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['pg_dump', 'postgres://mail:s3cr%40t@127.0.0.1:5432/mailsvc'],
    ['mariadb-dump', 'mysql://mail:s3cr%40t@127.0.0.1:3306/mailsvc'],
  ])('%s gets the password in its environment only', async (tool, url) => {
    fakeTool(dir, tool, 0);
    await dumpDatabase({ databaseUrl: url }, join(dir, 'out'));
    const argv = readFileSync(join(dir, `${tool}.argv`), 'utf8');
    expect(argv).not.toContain('s3cr');
    expect(argv).toContain('mailsvc');
    expect(readFileSync(join(dir, `${tool}.pw`), 'utf8')).toBe('s3cr@t');
  });

  it('a tool that exits non-zero rejects with its status and stderr, and leaves no dump file', async () => {
    fakeTool(dir, 'pg_dump', 1);
    const out = join(dir, 'out');
    writeFileSync(out, 'partial');
    const err = await dumpDatabase({ databaseUrl: 'postgres://mail:pw@127.0.0.1/mailsvc' }, out).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DumpToolError);
    expect(String((err as Error).message)).toBe('pg_dump exited 1: pg_dump: simulated failure');
    expect(String((err as Error).message)).not.toContain('pw');
    expect(existsSync(out)).toBe(false);
  });
});
