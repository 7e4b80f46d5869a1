import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { exec } from '../exec.js';
import { dumpDialect, myArgs, pgArgs } from './index.js';
import type { DumpSettings } from './index.js';
import { DumpToolError, runTool } from './run-tool.js';

/** What a physical copy records about the server it came from (for the manual restore steps). */
export type PhysicalInfo = { tool: 'pg_basebackup' | 'mariabackup'; server_version: string | null; server_datadir: string | null; database: string };

/**
 * A PostgreSQL program of the newest installed major version: on PATH first,
 * else Debian's /usr/lib/postgresql/<major>/bin (pg_verifybackup has no
 * wrapper in /usr/bin there).
 */
export function pgProgram(name: string): string {
  for (const d of (process.env.PATH ?? '').split(':')) if (d && existsSync(join(d, name))) return join(d, name);
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  for (const m of majors) if (existsSync(join(root, m, 'bin', name))) return join(root, m, 'bin', name);
  return name;
}

async function query(url: string, statement: string): Promise<string[] | null> {
  try {
    if (dumpDialect(url) === 'postgres') {
      const p = pgArgs(url);
      const r = await exec('psql', [...p.args, '--dbname', p.database, '--tuples-only', '--no-align', '--field-separator=\t', '--command', statement], { env: p.env, timeoutMs: 30_000 });
      return r.stdout.trim().split('\t');
    }
    const m = myArgs(url);
    const r = await exec('mariadb', [...m.args, '--batch', '--skip-column-names', '--execute', statement], { env: m.env, timeoutMs: 30_000 });
    return r.stdout.trim().split('\t');
  } catch {
    return null;
  }
}

/**
 * A physical copy of the database server into `dir` (which must not exist or
 * be empty), every exit status checked (a DumpToolError names the tool, its
 * status and the tail of its stderr):
 * - PostgreSQL: `pg_basebackup --format=plain --wal-method=stream` with a
 *   backup manifest (SHA-256 per file) that `pg_verifybackup` checks; the
 *   account needs the REPLICATION attribute and a `replication` line in
 *   pg_hba.conf. It copies the whole cluster.
 * - MariaDB: `mariabackup --backup --target-dir`: reads the server's data
 *   directory, so it runs on the database host as root; the whole server.
 * The copy is not prepared: a restore is the manual steps of
 * physicalRestoreSteps.
 */
export async function physicalCopy(settings: DumpSettings, dir: string, signal?: AbortSignal): Promise<PhysicalInfo> {
  const url = settings.databaseUrl;
  const dialect = dumpDialect(url);
  if (dialect === 'sqlite') throw new Error('SQLite has no separate physical copy: its online backup is already a page copy');
  if (dialect === 'postgres') {
    const p = pgArgs(url);
    // data_directory is readable by superusers and pg_read_all_settings only: without it the steps name Debian's default.
    const version = (await query(url, "select current_setting('server_version')"))?.[0] ?? null;
    const datadir = (await query(url, "select current_setting('data_directory')"))?.[0] ?? null;
    await runTool({ file: 'pg_basebackup', args: [...p.args, '--pgdata', dir, '--format=plain', '--wal-method=stream', '--checkpoint=fast', '--manifest-checksums=SHA256', '--no-sync'], env: p.env, signal });
    return { tool: 'pg_basebackup', server_version: version, server_datadir: datadir, database: p.database };
  }
  const m = myArgs(url);
  const info = await query(url, 'select @@version, @@datadir');
  const s = m.args;
  // mariabackup takes --host=… forms; the password travels in MYSQL_PWD as for the other clients.
  const opt = (name: string): string | undefined => {
    const i = s.indexOf(`--${name}`);
    return i >= 0 ? s[i + 1] : undefined;
  };
  const args = ['--backup', `--target-dir=${dir}`, ...(opt('host') ? [`--host=${opt('host')}`] : []), ...(opt('port') ? [`--port=${opt('port')}`] : []), ...(opt('user') ? [`--user=${opt('user')}`] : [])];
  await runTool({ file: 'mariabackup', args, env: m.env, signal });
  return { tool: 'mariabackup', server_version: info?.[0] ?? null, server_datadir: info?.[1] ?? null, database: m.database };
}

/**
 * The check `backup verify` runs on an unpacked scratch copy: `pg_verifybackup`
 * (every file against the backup manifest, and the WAL needed to make it
 * consistent), or `mariabackup --prepare` (applies the redo log: the copy is
 * made consistent as a restore would). Returns the problems (empty: ok).
 */
export async function checkPhysicalCopy(info: PhysicalInfo, dir: string, signal?: AbortSignal): Promise<string[]> {
  try {
    if (info.tool === 'pg_basebackup') await runTool({ file: pgProgram('pg_verifybackup'), args: ['--quiet', dir], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' }, signal });
    else await runTool({ file: 'mariabackup', args: ['--prepare', `--target-dir=${dir}`], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C' }, signal });
    return [];
  } catch (err) {
    if (err instanceof DumpToolError) return [`the physical copy does not check out: ${err.message}`];
    throw err;
  }
}

/** The manual steps that put a physical copy back (printed by a refused restore; the same in docs/backups.md). */
export function physicalRestoreSteps(info: PhysicalInfo, archive: string): string[] {
  if (info.tool === 'pg_basebackup') {
    const major = /^(\d+)/.exec(info.server_version ?? '')?.[1] ?? '<major>';
    const datadir = info.server_datadir ?? `/var/lib/postgresql/${major}/main`;
    const staged = '/var/lib/postgresql/mailsvc-restore';
    return [
      `mkdir -m 700 ${staged} && tar --extract --listed-incremental=/dev/null --file ${archive} --directory ${staged}`,
      `/usr/lib/postgresql/${major}/bin/pg_verifybackup ${staged}`,
      'systemctl stop postgresql',
      `mv ${datadir} ${datadir}.before-restore && mv ${staged} ${datadir} && chown -R postgres:postgres ${datadir} && chmod 700 ${datadir}`,
      'systemctl start postgresql',
      'mailsvc db migrate',
    ];
  }
  const datadir = (info.server_datadir ?? '/var/lib/mysql/').replace(/\/+$/, '');
  const staged = '/var/lib/mailsvc-mariabackup';
  return [
    `mkdir -m 700 ${staged} && tar --extract --listed-incremental=/dev/null --file ${archive} --directory ${staged}`,
    `mariabackup --prepare --target-dir=${staged}`,
    'systemctl stop mariadb',
    `mv ${datadir} ${datadir}.before-restore && mkdir -m 755 ${datadir}`,
    `mariabackup --copy-back --target-dir=${staged}`,
    `chown -R mysql:mysql ${datadir}`,
    'systemctl start mariadb',
    'mailsvc db migrate',
  ];
}
