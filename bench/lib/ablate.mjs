// Profiling switches for serve-mailsvc.mjs (bench/profile.mjs only; run.mjs
// never sets them): take one piece of the Bearer GET /auth/mfa path away and
// see what the request costs without it. Nothing in src/ is changed; the
// running objects are patched in the bench child.
//   stmt-cache  better-sqlite3 prepare() memoised per SQL text (the Kysely
//               SQLite driver prepares every query afresh)
//   guard       AdminGuard.authenticate answers a fixed principal (no token
//               lookup, no SHA-256)
//   mfa         MfaService.status answers a fixed object (no MFA record query)
import SqliteDatabase from 'better-sqlite3';

export const ABLATIONS = ['stmt-cache', 'guard', 'mfa'];

export function ablateBeforeContext(set) {
  for (const a of set) if (!ABLATIONS.includes(a)) throw new Error(`unknown BENCH_ABLATE entry ${a}`);
  if (set.has('stmt-cache')) {
    const prepare = SqliteDatabase.prototype.prepare;
    const caches = new WeakMap();
    SqliteDatabase.prototype.prepare = function cachedPrepare(sql) {
      let cache = caches.get(this);
      if (!cache) caches.set(this, (cache = new Map()));
      let stmt = cache.get(sql);
      if (!stmt) cache.set(sql, (stmt = prepare.call(this, sql)));
      return stmt;
    };
  }
}

export async function ablateContext(modules, set) {
  if (set.has('guard')) {
    const { guard } = await modules.get('auth');
    const principal = { subject: modules.infra.settings.adminUsername, via: 'bearer', mfaVerified: false, tokenId: 'ablated' };
    guard.authenticate = async () => principal;
  }
  if (set.has('mfa')) {
    const mfa = (await modules.get('mfa')).service;
    const status = await mfa.status();
    mfa.status = async () => ({ ...status });
  }
}
