import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type PrivatePostgres = { port: number; dir: string; url(user: string, database: string): string; psql(sql: string, database?: string): string; stop(): void };

const BIN = '/usr/lib/postgresql/15/bin';

/** Whether a private cluster can be made here: Debian's PostgreSQL 15 server binaries and a postgres user. */
export function privatePostgresAvailable(): string | null {
  if (!existsSync(join(BIN, 'initdb')) || !existsSync(join(BIN, 'pg_ctl'))) return `${BIN}/initdb not installed`;
  if (process.getuid?.() !== 0) return 'needs root (initdb runs as the postgres user through runuser)';
  try {
    execFileSync('id', ['postgres']);
  } catch {
    return 'no postgres user';
  }
  return null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/**
 * A PostgreSQL cluster of its own (the machine's has no replication line in
 * pg_hba.conf): initdb into a temp directory as the postgres user, trust
 * authentication for local, 127.0.0.1 and replication connections (initdb's
 * pg_hba with -A trust), started with pg_ctl on a free port on 127.0.0.1.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-pg-'));
  chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), Number(execFileSync('id', ['-g', 'postgres']).toString().trim()));
  const data = join(dir, 'data');
  const asPg = (file: string, args: string[]): string => execFileSync('runuser', ['-u', 'postgres', '--', file, ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
  asPg(join(BIN, 'initdb'), ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  const port = await freePort();
  asPg(join(BIN, 'pg_ctl'), ['-D', data, '-l', join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`, 'start']);
  const psql = (sql: string, database = 'postgres'): string =>
    execFileSync('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', database, '-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-c', sql], { env: { PATH: process.env.PATH ?? '' } }).toString().trim();
  return {
    port,
    dir,
    url: (user, database) => `postgres://${user}@127.0.0.1:${port}/${database}`,
    psql,
    stop: () => {
      try {
        asPg(join(BIN, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
