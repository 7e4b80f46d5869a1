// The mailsvc API as `mailsvc serve` builds it (openService + buildApp), in
// its own process, for bench/run.mjs. Configured by the parent through:
//   BENCH_DATA_DIR        temp data dir (SQLite database, secret key, auth log)
//   BENCH_ADMIN_PASSWORD  the administrator password
//   BENCH_LOG_LEVEL       pino level: 'warn' (no per-request lines) or 'info' (the default of the service)
//   BENCH_ABLATE          bench/profile.mjs only, comma-separated; see lib/ablate.mjs
// Logs go to stdout, which the parent points at a file.
import { openService } from '../dist/app/service.js';
import { buildApp } from '../dist/http/app.js';
import { ablateBeforeContext, ablateContext } from './lib/ablate.mjs';
import { serveOverIpc } from './lib/ipc.mjs';
import { benchSettings } from './lib/mailsvc-settings.mjs';

const dataDir = process.env.BENCH_DATA_DIR;
const password = process.env.BENCH_ADMIN_PASSWORD;
if (!dataDir || !password) throw new Error('serve-mailsvc: BENCH_DATA_DIR and BENCH_ADMIN_PASSWORD are required');
const ablate = new Set((process.env.BENCH_ABLATE ?? '').split(',').filter(Boolean));

const settings = benchSettings({ dataDir, password, logLevel: process.env.BENCH_LOG_LEVEL ?? 'warn' });
ablateBeforeContext(ablate);
const modules = await openService(settings);
await ablateContext(modules, ablate);
const app = await buildApp(modules);
await app.listen({ host: settings.apiHost, port: settings.apiPort });
serveOverIpc(app.server.address().port, async () => {
  await app.close();
  await modules.infra.close();
});
