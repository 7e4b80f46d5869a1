import { existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { RunFn } from '../../../adapters/config-applier/index.js';
import type { HostOps } from './types.js';

/** The host's users, groups, directories and units, changed as root through their own commands (no shell). */
export function localHostOps(exec: RunFn): HostOps {
  const must = async (file: string, args: string[]): Promise<string> => {
    const r = await exec(file, args, { timeoutMs: 120_000 });
    if (r.code !== 0) throw new Error(`${file} ${args.join(' ')} exited ${r.code}: ${r.stderr.trim().split('\n').slice(-2).join(' | ')}`);
    return r.stdout;
  };
  const ids = async (user: string, group: string): Promise<{ uid: number; gid: number }> => ({
    uid: Number((await must('id', ['-u', user])).trim()),
    gid: Number((await must('getent', ['group', group])).split(':')[2]),
  });
  return {
    async addToGroups(user, groups) {
      const have = (await must('id', ['-nG', user])).trim().split(/\s+/);
      const missing = groups.filter((g) => !have.includes(g));
      if (missing.length) await must('usermod', ['-aG', missing.join(','), user]);
      return missing;
    },
    async ensureSystemUser(name, home) {
      if ((await exec('getent', ['passwd', name], { timeoutMs: 10_000 })).code === 0) return false;
      await must('useradd', ['--system', '--user-group', '--home-dir', home, '--no-create-home', '--shell', '/usr/sbin/nologin', name]);
      return true;
    },
    async ensureDir(path, owner, group, mode) {
      const want = await ids(owner, group);
      if (existsSync(path)) {
        const st = statSync(path);
        if (st.isDirectory() && st.uid === want.uid && st.gid === want.gid && (st.mode & 0o7777) === mode) return false;
      }
      await must('install', ['-d', '-o', owner, '-g', group, '-m', mode.toString(8).padStart(4, '0'), path]);
      return true;
    },
    async ensureFile(path, owner, group, mode) {
      if (existsSync(path)) return false;
      await must('install', ['-D', '-o', owner, '-g', group, '-m', mode.toString(8).padStart(4, '0'), '/dev/null', path]);
      return true;
    },
    async ensureMode(path, mode) {
      if (!existsSync(path) || (statSync(path).mode & 0o7777) === mode) return false;
      await must('chmod', [mode.toString(8).padStart(4, '0'), path]);
      return true;
    },
    async enableUnit(unit) {
      const enabled = (await exec('systemctl', ['is-enabled', unit], { timeoutMs: 30_000 })).stdout.trim() === 'enabled';
      const active = (await exec('systemctl', ['is-active', unit], { timeoutMs: 30_000 })).stdout.trim() === 'active';
      if (enabled && active) return false;
      await must('systemctl', ['enable', '--now', unit]);
      return true;
    },
    async ensureCertificate(cert, key, snakeoil) {
      if (existsSync(cert) && existsSync(key)) return false;
      if (snakeoil) await must('make-ssl-cert', ['generate-default-snakeoil']);
      else {
        await must('install', ['-d', '-m', '0750', dirname(key)]);
        await must('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '3650', '-subj', '/CN=localhost', '-keyout', key, '-out', cert]);
        await must('chmod', ['0600', key]);
        await must('chmod', ['0644', cert]);
      }
      return true;
    },
    async groupExists(name) {
      return (await exec('getent', ['group', name], { timeoutMs: 10_000 })).code === 0;
    },
  };
}
