import { chownSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { LocalFileHost, applyConfig, rspamdChecker } from '../../adapters/config-applier/index.js';
import type { ConfigChecker, ConfigFileHost, DaemonReloader, RenderedFile } from '../../adapters/config-applier/index.js';
import { renderDkimSigning } from '../../adapters/rspamd/dkim-signing.js';
import type { SigningDomain } from '../../adapters/rspamd/dkim-signing.js';
import { AppError } from '../../shared/errors.js';

/** One key Rspamd signs with, its private key opened. */
export type SigningKey = { domain: string; selector: string; privateKey: string };

export type SigningOutcome = { status: 'changed' | 'unchanged' | 'skipped'; detail: string; reloaded: boolean };

export type SigningDeps = {
  /** Rspamd's local.d; its parent holds the key directory `dkim/`. */
  rspamdLocalDir: string;
  reloader: DaemonReloader;
  /** Whether Rspamd runs now (only then is it reloaded). */
  running: () => Promise<boolean>;
  host?: ConfigFileHost;
  checker?: ConfigChecker;
};

/** The group Rspamd runs as on Debian; the key directory is given to it. */
const RSPAMD_GROUP = '_rspamd';

function groupId(name: string): number | null {
  try {
    return Number(execFileSync('getent', ['group', name], { encoding: 'utf8' }).split(':')[2]);
  } catch {
    return null;
  }
}

/**
 * The key directory, 02750 owned by Rspamd's group: the setgid bit gives every
 * key file written there that group, so Rspamd reads a 0640 key while no other
 * user can.
 */
function ensureKeyDir(dir: string): void {
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o2750 });
  const gid = groupId(RSPAMD_GROUP);
  if (gid !== null && process.getuid?.() === 0 && statSync(dir).gid !== gid) chownSync(dir, 0, gid);
}

/**
 * Renders `local.d/dkim_signing.conf` and one key file per signing key
 * (`<rspamd dir>/dkim/<domain>.<selector>.key`, 0640), checks them with
 * `rspamadm configtest` and reloads Rspamd: the config applier, so a refused
 * configuration leaves the live files as they were.
 */
export async function applySigning(keys: readonly SigningKey[], deps: SigningDeps): Promise<SigningOutcome> {
  const root = dirname(deps.rspamdLocalDir);
  if (!existsSync(deps.rspamdLocalDir)) return { status: 'skipped', detail: `${deps.rspamdLocalDir} does not exist (Rspamd not installed?)`, reloaded: false };
  const keyDir = join(root, 'dkim');
  ensureKeyDir(keyDir);
  const byDomain = new Map<string, SigningDomain & { selectors: { selector: string; path: string }[] }>();
  const files: RenderedFile[] = [];
  for (const k of keys) {
    const path = join(keyDir, `${k.domain}.${k.selector}.key`);
    files.push({ path, content: k.privateKey.endsWith('\n') ? k.privateKey : `${k.privateKey}\n`, mode: 0o640 });
    const d = byDomain.get(k.domain) ?? { domain: k.domain, selectors: [] };
    d.selectors.push({ selector: k.selector, path });
    byDomain.set(k.domain, d);
  }
  files.push({ path: join(deps.rspamdLocalDir, 'dkim_signing.conf'), content: renderDkimSigning([...byDomain.values()]), mode: 0o644 });
  const running = await deps.running();
  const unit = { daemon: 'rspamd', files, checker: deps.checker ?? rspamdChecker(root), reload: running };
  const r = await applyConfig([unit], deps.host ?? new LocalFileHost(), deps.reloader);
  if (!r.ok) {
    const restore = r.restoreErrors.length ? ` Restoring failed for: ${r.restoreErrors.join('; ')}` : ' Every file was restored.';
    throw new AppError('conflict', `DKIM signing: ${r.stage} of rspamd failed: ${r.detail}.${restore}`);
  }
  const changed = r.changed.length + r.created.length > 0;
  const reloaded = r.reloaded.includes('rspamd');
  return {
    status: changed ? 'changed' : 'unchanged',
    detail: changed ? (reloaded ? 'applied and reloaded' : 'applied (Rspamd not running: read at its next start)') : 'already up to date',
    reloaded,
  };
}
