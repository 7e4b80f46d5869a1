import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where the data and the settings file live when nothing says otherwise. A
 * checkout (a git work tree, or the sources next to the build) keeps them in
 * `var/` of the checkout, whatever the current directory; an installed
 * release uses the host's places, so the service and every `mailsvc` command
 * find the same database from anywhere.
 */
export type Layout = { kind: 'checkout' | 'installed'; root: string; dataDir: string; configFile: string | undefined };

export const INSTALLED_DATA_DIR = '/var/lib/mailsvc';
export const INSTALLED_CONFIG_FILE = '/etc/mailsvc/mailsvc.conf';

/** The directory of mailsvc's own package.json, found upward from this file (src/, dist/ or a bundle chunk). */
export function packageRoot(from: string = fileURLToPath(import.meta.url)): string {
  for (let dir = dirname(from); dir !== dirname(dir); dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (!existsSync(pkg)) continue;
    try {
      if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'mailsvc') return dir;
    } catch {
      // not ours: keep looking upward
    }
  }
  return process.cwd();
}

export function detectLayout(root: string = packageRoot()): Layout {
  const checkout = existsSync(join(root, '.git')) || existsSync(join(root, 'src', 'main.ts'));
  return checkout
    ? { kind: 'checkout', root, dataDir: join(root, 'var'), configFile: undefined }
    : { kind: 'installed', root, dataDir: INSTALLED_DATA_DIR, configFile: INSTALLED_CONFIG_FILE };
}
