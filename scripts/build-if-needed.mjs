// `npm start`'s prestart: in a checkout, build when dist/ is missing or older than
// src/ (so `npm ci && npm start` works on a fresh clone). An installed release
// ships dist/ and has no src/: nothing to do, and no build tool is needed.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bundle = join(root, 'dist', 'bundle', 'mailsvc.js');
const src = join(root, 'src');
// The web panel's sources and its build output (vite writes dist/panel/index.html last).
const panelSrc = join(root, 'panel');
const panelBuilt = join(root, 'dist', 'panel', 'index.html');

function newest(dir) {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

const panelStale = existsSync(panelSrc) && (!existsSync(panelBuilt) || newest(panelSrc) > statSync(panelBuilt).mtimeMs);
if (existsSync(src) && (!existsSync(bundle) || newest(src) > statSync(bundle).mtimeMs || panelStale)) {
  process.stderr.write('mailsvc: building (npm run build)…\n');
  const r = spawnSync('npm', ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
