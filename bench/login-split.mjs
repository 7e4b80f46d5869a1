// Where a sign-in's time goes beyond its argon2id verify (issue 26, the login row; a diagnosis, not part of
// npm run bench): npm run build && node bench/login-split.mjs
//
// In one process, alternating, 100 each: one raw argon2id verify with ARGON2_PARAMS, POST /auth/login through
// Fastify (app.inject, no socket), and auth.login without HTTP. For each: wall time per call, minor page faults,
// and the CPU each thread of the process used per call (/proc/self/task: the main thread is the first, the
// others are libuv's pool, where argon2 runs).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { verify } from '@node-rs/argon2';
import { openService } from '../dist/app/service.js';
import { buildApp } from '../dist/http/app.js';
import { hashPassword } from '../dist/shared/password-hash.js';
import { benchSettings } from './lib/mailsvc-settings.mjs';
const PASSWORD = 'bench-password-0123456789';
const dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-login-split-'));
const modules = await openService(benchSettings({ dataDir, password: PASSWORD, logLevel: 'warn' }));
const app = await buildApp(modules);
await app.ready();
const login = () => app.inject({ method: 'POST', url: '/auth/login', payload: { username: 'admin', password: PASSWORD } });
const h = await hashPassword(PASSWORD);
await login(); await verify(h, PASSWORD);
const threads = () => Object.fromEntries(readdirSync('/proc/self/task').map((t) => { const f = readFileSync(`/proc/self/task/${t}/stat`, 'utf8'); const name = f.slice(f.indexOf('(') + 1, f.lastIndexOf(')')); const p = f.slice(f.lastIndexOf(')') + 2).split(' '); return [`${t} ${name}`, (Number(p[11]) + Number(p[12])) * 10]; }));
const diff = (a, b) => Object.entries(b).map(([k, v]) => [k, v - (a[k] ?? 0)]).filter(([, v]) => v > 0);
const fault = () => { const p = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' '); return Number(p[7]); };
const { auth } = await modules.get('auth');
const direct = () => auth.login('127.0.0.1', 'admin', PASSWORD);
for (const [what, fn] of [['verify', () => verify(h, PASSWORD)], ['login', login], ['auth.login', direct], ['verify', () => verify(h, PASSWORD)], ['login', login], ['auth.login', direct]]) {
  const a = threads(); const f0 = fault(); const t = performance.now();
  for (let i = 0; i < 100; i++) await fn();
  const ms = (performance.now() - t) / 100; const b = threads();
  console.log(what, ms.toFixed(2), 'ms/op; minor faults/op', ((fault() - f0) / 100).toFixed(0), '; CPU ms/op by thread:', diff(a, b).map(([k, v]) => `${k}=${(v / 100).toFixed(2)}`).join(' '));
}
await app.close();
await modules.infra.close();
rmSync(dataDir, { recursive: true, force: true });
