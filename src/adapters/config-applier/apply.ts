import type { ApplyFailure, ApplyResult, ApplyUnit, ConfigFileHost, DaemonReloader, FileState } from './types.js';

type Planned = { unit: ApplyUnit; path: string; content: Buffer; mode: number; owner?: { uid: number; gid: number }; before: FileState | null; temp?: string; placed: boolean };

const message = (err: unknown): string => (err instanceof Error ? err.message : String(err));

function differs(p: Planned): boolean {
  return p.before === null || !p.before.content.equals(p.content) || p.before.mode !== p.mode || (p.owner !== undefined && (p.owner.uid !== p.before.uid || p.owner.gid !== p.before.gid));
}

/**
 * The one apply step for every file a daemon reads: temp files in the same
 * directory, each daemon's checker on the new content, rename into place,
 * reload. A failed check leaves the live files untouched; a failed rename or
 * reload puts every file back (content and mode; new files removed) and
 * reloads the daemons again. Nothing changed: nothing written, no reload.
 */
export async function applyConfig(units: readonly ApplyUnit[], host: ConfigFileHost, reloader: DaemonReloader): Promise<ApplyResult> {
  const seen = new Set<string>();
  const plan: Planned[] = [];
  for (const unit of units) {
    for (const f of unit.files) {
      if (!f.path.startsWith('/')) throw new Error(`config applier: ${f.path} is not an absolute path`);
      if (seen.has(f.path)) throw new Error(`config applier: ${f.path} is rendered twice`);
      seen.add(f.path);
      const content = typeof f.content === 'string' ? Buffer.from(f.content, 'utf8') : f.content;
      plan.push({ unit, path: f.path, content, mode: f.mode & 0o7777, owner: f.owner, before: await host.read(f.path), placed: false });
    }
  }
  const moving = plan.filter(differs);
  const unchanged = plan.filter((p) => !differs(p)).map((p) => p.path);
  if (moving.length === 0) return { ok: true, changed: [], created: [], unchanged, reloaded: [] };
  const touched = units.filter((u) => moving.some((p) => p.unit === u));

  const fail = async (stage: ApplyFailure['stage'], daemon: string, detail: string, reloadAgain: ApplyUnit[]): Promise<ApplyFailure> => {
    const { restored, errors } = await restore(moving, host);
    const reloadedAfterRestore: string[] = [];
    for (const u of reloadAgain) {
      try {
        await reloader.reload(u.daemon);
        reloadedAfterRestore.push(u.daemon);
      } catch (err) {
        errors.push(`reload of ${u.daemon} after the restore failed: ${message(err)}`);
      }
    }
    return { ok: false, stage, daemon, detail, restored, reloadedAfterRestore, restoreErrors: errors };
  };

  try {
    for (const p of moving) p.temp = await host.writeTemp(p.path, p.content, p.mode, p.owner ?? p.before ?? undefined);
  } catch (err) {
    const p = moving.find((m) => m.temp === undefined);
    return fail('write', p?.unit.daemon ?? '', `cannot write next to ${p?.path ?? '?'}: ${message(err)}`, []);
  }
  for (const u of touched) {
    const files = plan.filter((p) => p.unit === u).map((p) => ({ path: p.path, content: p.content }));
    let outcome;
    try {
      outcome = await u.checker.check(files);
    } catch (err) {
      outcome = { ok: false as const, detail: message(err) };
    }
    if (!outcome.ok) return fail('check', u.daemon, `${u.checker.name} refused the new configuration: ${outcome.detail}`, []);
  }
  for (const p of moving) {
    try {
      await host.rename(p.temp ?? '', p.path);
      p.placed = true;
    } catch (err) {
      return fail('write', p.unit.daemon, `cannot move the new ${p.path} into place: ${message(err)}`, []);
    }
  }
  const reloaded: string[] = [];
  for (const u of touched.filter((t) => t.reload)) {
    try {
      await reloader.reload(u.daemon);
      reloaded.push(u.daemon);
    } catch (err) {
      // Every daemon reloaded so far, and the one that failed, must read the old files again.
      const again = touched.filter((t) => t.reload && (reloaded.includes(t.daemon) || t === u));
      return fail('reload', u.daemon, `reload of ${u.daemon} failed: ${message(err)}`, again);
    }
  }
  return {
    ok: true,
    changed: moving.filter((p) => p.before !== null).map((p) => p.path),
    created: moving.filter((p) => p.before === null).map((p) => p.path),
    unchanged,
    reloaded,
  };
}

/** Puts every placed file back as it was and removes temp files that were never placed. */
async function restore(moving: Planned[], host: ConfigFileHost): Promise<{ restored: string[]; errors: string[] }> {
  const restored: string[] = [];
  const errors: string[] = [];
  for (const p of moving) {
    try {
      if (!p.placed) {
        if (p.temp !== undefined) await host.remove(p.temp);
        continue;
      }
      if (p.before === null) {
        await host.remove(p.path);
      } else {
        const temp = await host.writeTemp(p.path, p.before.content, p.before.mode, p.before);
        await host.rename(temp, p.path);
      }
      restored.push(p.path);
    } catch (err) {
      errors.push(`cannot restore ${p.path}: ${message(err)}`);
    }
  }
  return { restored, errors };
}
