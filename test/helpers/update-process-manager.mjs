#!/usr/bin/env node
// The process manager the update tests give the helper (MAILSVC_SERVICE_MANAGER),
// playing systemd for two units: `restart mailsvc.service` stops the running
// `mailsvc serve` and starts `<install root>/current/bin/mailsvc serve` (the release's
// launcher: its own Node.js; a release without one: its dist/bundle/mailsvc.js on this node)
// again (so a switched `current` runs the new release), and
// `start mailsvc-update@<job>.service` starts `settings apply-update --job <job>`
// in the background (`start mailsvc-backup@<job>.service`: `backup run-job <job>`). The helper runs it with an almost empty environment, so
// everything it needs is in <state dir>/env.json (written by the test).
//
// Usage: update-process-manager.mjs <state dir> restart|start|stop <unit>
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import process from 'node:process';
import { setTimeout } from 'node:timers';

const [stateDir, verb, unit] = process.argv.slice(2);
const env = JSON.parse(readFileSync(join(stateDir, 'env.json'), 'utf8'));
const launcher = join(env.MAILSVC_INSTALL_ROOT, 'current', 'bin', 'mailsvc');
const bin = join(env.MAILSVC_INSTALL_ROOT, 'current', 'dist', 'bundle', 'mailsvc.js');
const pidFile = join(stateDir, 'mailsvc.pid');

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function stop() {
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8'));
  if (!alive(pid)) return;
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));
  if (alive(pid)) process.kill(pid, 'SIGKILL');
}

function startDetached(args, log) {
  const out = openSync(join(stateDir, log), 'a');
  const [file, argv] = existsSync(launcher) ? [launcher, args] : [process.execPath, [bin, ...args]];
  const child = spawn(file, argv, { env, detached: true, stdio: ['ignore', out, out] });
  closeSync(out);
  child.unref();
  return child.pid;
}

if (unit === 'mailsvc.service' && (verb === 'restart' || verb === 'start' || verb === 'stop')) {
  await stop();
  if (verb !== 'stop') writeFileSync(pidFile, String(startDetached(['serve'], 'mailsvc.log')));
} else if (verb === 'start' && /^mailsvc-update@[a-z0-9]+\.service$/.test(unit)) {
  startDetached(['settings', 'apply-update', '--job', unit.slice('mailsvc-update@'.length, -'.service'.length)], 'update.log');
} else if (verb === 'start' && /^mailsvc-backup@[a-z0-9]+\.service$/.test(unit)) {
  startDetached(['backup', 'run-job', unit.slice('mailsvc-backup@'.length, -'.service'.length)], 'backup.log');
} else {
  process.stderr.write(`update-process-manager: unknown ${verb} ${unit}\n`);
  process.exit(2);
}
