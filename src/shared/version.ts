import { readFileSync } from 'node:fs';

function readVersion(): string {
  for (const rel of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'mailsvc' && pkg.version) return pkg.version;
    } catch {
      // try the next candidate: the file sits at a different depth in src/ and dist/
    }
  }
  return '0.0.0';
}

export const SERVICE_VERSION = readVersion();
