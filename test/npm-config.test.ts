import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/cli.js';

/**
 * better-sqlite3 compiles from source with no prebuilt download, and npm warns
 * about no setting of the project. Both run with the environment npm gives a
 * script removed (npm_config_*), and HOME pointing at an empty directory, so
 * only the checkout's own files count.
 */
function cleanEnv(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
  // Should anything try to download after all, it reaches a closed local port, not the Internet.
  return { ...env, HOME: home, npm_config_proxy: 'http://127.0.0.1:9', HTTPS_PROXY: 'http://127.0.0.1:9', HTTP_PROXY: 'http://127.0.0.1:9' };
}

describe('npm settings of the checkout', () => {
  it('npm warns about no project setting (no .npmrc key npm does not know)', () => {
    const home = mkdtempSync(join(tmpdir(), 'mailsvc-npm-home-'));
    try {
      const r = spawnSync('npm', ['pkg', 'get', 'name'], { cwd: REPO_ROOT, env: cleanEnv(home), encoding: 'utf8', timeout: 60_000 });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe('"mailsvc"');
      expect(r.stderr).not.toMatch(/Unknown (project|env|user) config/);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it("better-sqlite3's install step is told to build from source by .prebuild-installrc, not by npm config", () => {
    expect(existsSync(join(REPO_ROOT, '.prebuild-installrc'))).toBe(true);
    const req = createRequire(join(REPO_ROOT, 'package.json'));
    const sqliteDir = dirname(req.resolve('better-sqlite3/package.json'));
    const bin = join(dirname(createRequire(join(sqliteDir, 'package.json')).resolve('prebuild-install/package.json')), 'bin.js');
    const home = mkdtempSync(join(tmpdir(), 'mailsvc-npm-home-'));
    try {
      // What `npm ci` runs first in node_modules/better-sqlite3 ("prebuild-install || node-gyp rebuild").
      const r = spawnSync(process.execPath, [bin, '--verbose'], { cwd: sqliteDir, env: cleanEnv(home), encoding: 'utf8', timeout: 60_000 });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain('--build-from-source specified, not attempting download');
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
