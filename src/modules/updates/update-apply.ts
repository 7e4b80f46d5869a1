import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { downloadPinned } from '../../adapters/outbound/pinned-get.js';
import { exec } from '../../adapters/exec.js';
import type { HelperClient } from '../../adapters/helper-client.js';
import { AppError } from '../../shared/errors.js';
import type { JobContext } from '../jobs/index.js';
import type { DatabaseSnapshotter, Snapshot } from './db-snapshot.js';
import { parseSha256File } from './feed.js';
import { COMMAND_LINK_PATH, followCommandLink, InstallTree, lockDownTree, setLink } from './install-tree.js';
import type { ApplyUpdateInput, UpdateReport } from './schema.js';
import { fetchError } from './update.service.js';
import type { UpdateService } from './update.service.js';
import { waitForHealth } from './health-wait.js';
import type { HealthProbe } from './health-wait.js';

export type ApplyDeps = {
  updates: UpdateService;
  snapshotter: DatabaseSnapshotter;
  helper: HelperClient;
  /** Where the restarted service answers. */
  probe: HealthProbe;
  /** The environment `db migrate` of the new release runs with (the service's settings). */
  env: Record<string, string>;
  /** The command link the units start (default /usr/local/bin/mailsvc; tests name their own). */
  commandLink?: string;
};

const TEN_MINUTES = 600_000;
/** Snapshots of successful updates kept (the newest), so one can still go back by hand. */
const KEEP_SNAPSHOTS = 3;

function pruneSnapshots(dir: string, keep: number): void {
  try {
    // Names start with an ISO time: the order of the names is the order of the updates.
    for (const old of readdirSync(dir).sort().slice(0, -keep)) rmSync(join(dir, old), { recursive: true, force: true });
  } catch {
    // no snapshots directory: nothing to prune
  }
}

/**
 * The update job: download → sha256 and signature → unpack into
 * releases/<version> → database snapshot → the new release's migrations →
 * switch `current` → restart through the helper → wait for /health/details.
 * A refusal before the snapshot changes nothing; any failure after it puts
 * `current` back, restores the snapshot and restarts the old release.
 */
export async function applyUpdate(deps: ApplyDeps, input: ApplyUpdateInput, ctx: JobContext): Promise<UpdateReport> {
  const started = Date.now();
  const steps: { step: string; seconds: number }[] = [];
  let stepStart = Date.now();
  const step = async (fraction: number, name: string, message: string): Promise<void> => {
    const last = steps.at(-1);
    if (last) last.seconds = (Date.now() - stepStart) / 1000;
    steps.push({ step: name, seconds: 0 });
    stepStart = Date.now();
    await ctx.progress(fraction, message);
    if (ctx.signal.aborted) throw new AppError('conflict', 'the update was interrupted before it changed anything');
  };
  const { updates } = deps;
  const settings = updates.deps.settings;
  const tree = new InstallTree(settings.installRoot);
  // As root (mailsvc-update@.service), only into a tree the service user cannot write: it holds the code root runs.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) tree.assertRootOwned();

  await step(0.02, 'check', 'checking the channel feed');
  const check = await updates.check();
  const { feed } = check;
  const from = check.current_version;
  const to = feed.version;
  if (!check.update_available && !check.downgrade) throw new AppError('conflict', `${from} is already the newest release on the ${check.channel} channel`);
  if (check.downgrade && !check.downgrade_allowed) {
    throw new AppError('conflict', `refusing to go back from ${from} to ${to}: this database has migrations ${to} does not know, and its code would not read them`);
  }
  if (check.downgrade && input.allow_downgrade !== true) {
    throw new AppError('conflict', `${to} on the ${check.channel} channel is older than ${from}: apply with allow_downgrade (--allow-downgrade) to install it`);
  }
  const previous = tree.currentTarget();
  if (previous === null) throw new AppError('conflict', `no ${tree.current} symlink: this mailsvc was not installed with mailsvc install, so it cannot be switched`);

  await step(0.1, 'download', `downloading ${to}`);
  const incoming = tree.incoming();
  const name = `mailsvc-${to}`;
  const archive = join(incoming, `${name}.tar.gz`);
  let got: { bytes: number; sha256: string };
  try {
    got = await downloadPinned(feed.download_url, archive, { policy: updates.deps.outbound, timeoutMs: TEN_MINUTES, maxBytes: settings.maxArchiveBytes, ca: updates.deps.ca });
  } catch (err) {
    throw fetchError(feed.download_url, err);
  }

  await step(0.3, 'verify', 'checking the archive against its sha256 and the signed feed');
  const published = parseSha256File((await updates.get(feed.sha256_url, 4096)).toString('utf8'));
  if (got.sha256 !== feed.sha256 || published !== feed.sha256) {
    rmSync(incoming, { recursive: true, force: true });
    throw new AppError('upstream', `refused ${name}.tar.gz: its sha256 ${got.sha256} does not match the signed ${feed.sha256}${published !== feed.sha256 ? ' nor the published .sha256' : ''}; nothing was changed`);
  }

  await step(0.35, 'unpack', `unpacking into releases/${to}`);
  const unpack = join(incoming, 'unpack');
  await exec('mkdir', ['-p', unpack]);
  // Owned by whoever unpacks (root), modes under the umask: nothing in the archive sets an owner or a setuid bit.
  await exec('sh', ['-c', 'umask 022 && exec tar -xzf "$1" -C "$2" --no-same-owner --no-same-permissions', 'tar', archive, unpack], { timeoutMs: TEN_MINUTES });
  const top = readdirSync(unpack);
  const pkgFile = join(unpack, name, 'package.json');
  if (top.length !== 1 || top[0] !== name || !existsSync(pkgFile) || (JSON.parse(readFileSync(pkgFile, 'utf8')) as { version?: string }).version !== to) {
    rmSync(incoming, { recursive: true, force: true });
    throw new AppError('upstream', `refused ${name}.tar.gz: it does not hold one directory ${name}/ with version ${to}; nothing was changed`);
  }
  await lockDownTree(join(unpack, name), asRoot);
  const target = tree.releaseDir(to);
  if (target === previous) throw new AppError('conflict', `${to} is the release running`);
  rmSync(target, { recursive: true, force: true });
  renameSync(join(unpack, name), target);
  rmSync(incoming, { recursive: true, force: true });

  // From here on the database or `current` may change: every failure rolls back.
  const probeKey = await deps.probe.open();
  let snapshot: Snapshot | undefined;
  let switched = false;
  let linkBefore: string | null = null;
  let restarted = false;
  try {
    await step(0.45, 'snapshot', 'taking a database snapshot');
    // Root writes the snapshot into its own 0700 directory beside the releases, never into the service's data directory.
    mkdirSync(tree.snapshots, { recursive: true, mode: 0o700 });
    chmodSync(tree.snapshots, 0o700);
    snapshot = await deps.snapshotter.take(join(tree.snapshots, `${new Date().toISOString().replace(/[:.]/g, '-')}-${from}-to-${to}`));

    await step(0.6, 'migrate', `running the migrations of ${to}`);
    try {
      // On the release's own Node.js (its launcher) when it has one: its native addons are compiled for that node.
      const launcher = join(target, 'bin', 'mailsvc');
      const [file, args] = existsSync(launcher) ? [launcher, []] : [process.execPath, [join(target, 'dist', 'bundle', 'mailsvc.js')]];
      await exec(file, [...args, 'db', 'migrate'], { env: deps.env, timeoutMs: TEN_MINUTES });
    } catch (err) {
      throw new AppError('upstream', `the migrations of ${to} failed: ${err instanceof Error ? err.message : String(err)}`);
    }

    await step(0.7, 'switch', `switching current to releases/${to}`);
    tree.switchTo(target);
    switched = true;
    // A host installed before releases carried their runtime: its command link moves to the launcher.
    linkBefore = followCommandLink(tree, deps.commandLink ?? COMMAND_LINK_PATH);

    await step(0.75, 'restart', 'restarting the service through the helper');
    restarted = true;
    await deps.helper.run('mailsvc-restart', []);

    await step(0.8, 'health', `waiting for ${to} to answer /health/details`);
    await waitForHealth(deps.probe, probeKey, to, settings.healthTimeout * 1000, ctx.signal);
  } catch (err) {
    const reason = err instanceof AppError ? err.detail : err instanceof Error ? err.message : String(err);
    await ctx.progress(0.85, `rolling back: ${reason}`.slice(0, 200));
    const back: string[] = [];
    // Each step is tried even when one before it failed: the most of the old state comes back.
    const attempt = async (what: string, fn: () => Promise<string>): Promise<void> => {
      try {
        back.push(await fn());
      } catch (e) {
        back.push(`${what} FAILED (${e instanceof Error ? e.message : String(e)})`);
      }
    };
    if (switched) await attempt('switching current back', () => Promise.resolve((tree.switchTo(previous), `current points at ${previous} again`)));
    const link = linkBefore;
    if (link !== null) await attempt('putting the command link back', () => Promise.resolve((setLink(deps.commandLink ?? COMMAND_LINK_PATH, link), `the command link points at ${link} again`)));
    const taken = snapshot;
    if (taken) await attempt(`restoring the snapshot ${taken.dir}`, async () => (await deps.snapshotter.restore(taken), 'the database snapshot is restored'));
    if (restarted) {
      await attempt('restarting the old release', async () => {
        await deps.helper.run('mailsvc-restart', []);
        return `${from} restarted through the helper`;
      });
      await waitForHealth(deps.probe, probeKey, from, settings.healthTimeout * 1000, ctx.signal).then(
        () => back.push(`${from} runs and answers /health/details`),
        (e: unknown) => back.push(`but ${from} did not answer /health/details either (${e instanceof Error ? e.message : String(e)}): check journalctl -u mailsvc`),
      );
    }
    rmSync(target, { recursive: true, force: true });
    await deps.probe.close(probeKey).catch(() => undefined);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    throw new AppError('upstream', `the update from ${from} to ${to} failed (${reason}) and was rolled back in ${seconds} s: ${back.join('; ') || 'nothing had changed'}`);
  }
  await deps.probe.close(probeKey).catch(() => undefined);
  pruneSnapshots(tree.snapshots, KEEP_SNAPSHOTS);
  const last = steps.at(-1);
  if (last) last.seconds = (Date.now() - stepStart) / 1000;
  return { from, to, outcome: 'updated', seconds: (Date.now() - started) / 1000, steps, snapshot: snapshot.dir };
}
