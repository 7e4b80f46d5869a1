import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as rclone from '../../adapters/rclone/index.js';
import { parseRemoteTarget } from '../../config/backup-settings.js';
import { backupSecretsEnv } from '../../config/backup-secrets-file.js';
import type { Settings } from '../../config/settings.js';
import type { Db } from '../../db/database.js';
import { AppError } from '../../shared/errors.js';
import type { SecretBox } from '../../shared/secret-box.js';
import type { Progress } from './backup-run.js';
import { BackupSecrets } from './backup-secrets.repository.js';
import { retentionPlan } from './chain.js';
import { MANIFEST, readManifest } from './manifest.js';
import type { Manifest } from './manifest.js';
import { CRYPT_REMOTE, OBSCURED, RemoteRefused, checkCredential, envName, remoteEnvFor } from './remote-policy.js';

/** The crypt remote mailsvc layers over each target: rclone's own encryption (XSalsa20-Poly1305 per file, a tool made for the job). */
const CRYPT = CRYPT_REMOTE;
const CREDENTIAL = 'remote:';

/**
 * Copies finished backups to the REMOTE_TARGETS through rclone, encrypted by
 * a `crypt` remote over each target, then proves the copy with `rclone
 * cryptcheck`. The encryption key is MAILSVC_BACKUP_ENCRYPTION_KEY when set,
 * else one generated and sealed on first use. A remote is defined by root's
 * environment or root's backup-secrets file (RCLONE_CONFIG_<REMOTE>_*); of what `backup remote-credential`
 * stored, only the secrets remote-policy.ts allows for its type reach rclone.
 */
export class RemoteCopier {
  readonly secrets: BackupSecrets;

  constructor(private readonly settings: Settings, db: () => Db, box: () => SecretBox) {
    this.secrets = new BackupSecrets(db, box);
  }

  /** Root's environment over root's backup-secrets file (the remotes' definitions and credentials, the encryption key). */
  private rootEnv(): Record<string, string | undefined> {
    return backupSecretsEnv(this.settings.backup.secretsFile);
  }

  private async key(): Promise<{ key: string; created: boolean }> {
    const fromEnv = this.rootEnv().MAILSVC_BACKUP_ENCRYPTION_KEY;
    if (fromEnv) return { key: fromEnv, created: false };
    return this.secrets.encryptionKey();
  }

  /** The sealed options stored for `remote` (names matched exactly: `_` is a LIKE wildcard). */
  private async stored(remote: string): Promise<Record<string, string>> {
    const prefix = `${CREDENTIAL}${remote}:`;
    const creds: Record<string, string> = {};
    for (const name of await this.secrets.names(prefix)) if (name.startsWith(prefix)) creds[name.slice(prefix.length)] = (await this.secrets.get(name)) ?? '';
    return creds;
  }

  /**
   * Refuses (RemoteRefused) a target root would not send to: a remote root's
   * environment does not define with an allowed type, or one whose stored
   * options are not the plain secrets of that type. Runs before anything.
   */
  async check(targets: readonly string[]): Promise<void> {
    for (const target of targets) {
      const t = parseRemoteTarget(target);
      if (!t) throw new RemoteRefused(`"${target}" is not <remote>:<path>`);
      remoteEnvFor(t.remote, this.rootEnv(), await this.stored(t.remote));
    }
  }

  /** The environment rclone runs with for one target: root's definition of its remote, the stored secrets allowed for it, and the crypt layer over it. */
  async env(target: string): Promise<{ env: Record<string, string>; created: boolean }> {
    const t = parseRemoteTarget(target);
    if (!t) throw new RemoteRefused(`"${target}" is not <remote>:<path>`);
    // The administrator's own RCLONE_CONFIG_<REMOTE>_* (root's environment and backup-secrets file: the remotes' definitions), then the allowed sealed secrets.
    const root = this.rootEnv();
    const fromEnv = Object.fromEntries(Object.entries(root).filter((e): e is [string, string] => e[0].startsWith('RCLONE_CONFIG_') && e[1] !== undefined));
    const creds = remoteEnvFor(t.remote, root, await this.stored(t.remote));
    const { key, created } = await this.key();
    return {
      created,
      env: {
        ...fromEnv,
        ...creds,
        ...rclone.remoteEnv(CRYPT, { type: 'crypt', remote: target, password: await rclone.obscure(key), filename_encryption: 'off', directory_name_encryption: 'false' }),
      },
    };
  }

  /**
   * Stores one secret of a remote, sealed; passwords are obscured as rclone
   * expects. Only the secrets remote-policy.ts allows (for the remote's type
   * when this process's environment defines it); never a type, host, URL,
   * path or command.
   */
  async setCredential(remote: string, option: string, value: string): Promise<void> {
    const type = this.rootEnv()[envName(remote, 'type')];
    checkCredential(remote, option, value, type === '' ? undefined : type);
    const o = option.toLowerCase();
    const v = OBSCURED.has(o) ? await rclone.obscure(value) : value;
    await this.secrets.put(`${CREDENTIAL}${remote}:${o}`, v);
  }

  /**
   * Copies backup `id` to every target and proves each copy (`cryptcheck`);
   * the manifest goes last, so a remote directory with a manifest had every
   * artifact uploaded first. Then, on each target whose copy was checked,
   * retention runs with the same plan as LOCAL_DIR (`retention` set).
   */
  async upload(targets: readonly string[], dir: string, id: string, progress: Progress, retention?: { days: number; now: number }): Promise<{ targets: string[]; removed: string[]; notes: string[] }> {
    const done: string[] = [];
    const removed: string[] = [];
    const notes: string[] = [];
    let created = false;
    for (const target of targets) {
      progress(0.97, `copying ${id} to ${target} (encrypted)`);
      const e = await this.env(target);
      created ||= e.created;
      try {
        await rclone.copy(dir, `${CRYPT}:${id}`, e.env, { exclude: `/${MANIFEST}` });
        await rclone.copy(dir, `${CRYPT}:${id}`, e.env, { include: `/${MANIFEST}` });
        await rclone.check(dir, `${CRYPT}:${id}`, e.env, { crypt: true });
      } catch (err) {
        throw new AppError('upstream', `the copy to ${target} failed (the local backup ${id} is complete and kept): ${err instanceof Error ? err.message : String(err)}`);
      }
      done.push(target);
      if (retention) {
        progress(0.98, `applying retention on ${target}`);
        const r = await this.retention(target, e.env, id, retention);
        removed.push(...r.removed.map((x) => `${target}/${x}`));
        notes.push(...r.notes);
      }
    }
    if (created) progress(0.99, 'a new remote encryption key was generated: run `mailsvc backup encryption-key` once and keep it off this host');
    return { targets: done, removed, notes };
  }

  /**
   * Retention on one target, the plan LOCAL_DIR uses (chain.ts): the backups
   * the target holds are read from their manifests there (never from LOCAL_DIR:
   * what the remote holds is the truth there), so a chain is complete only
   * when every member is on that target. `justUploaded` is never removed. A
   * directory without a readable manifest (an interrupted upload, or not ours)
   * is left alone and reported.
   */
  private async retention(target: string, env: Record<string, string>, justUploaded: string, r: { days: number; now: number }): Promise<{ removed: string[]; notes: string[] }> {
    const notes: string[] = [];
    const held: Manifest[] = [];
    let dirs: string[];
    try {
      dirs = (await rclone.lsjson(`${CRYPT}:`, env, { dirsOnly: true })).map((x) => x.Name);
    } catch (err) {
      return { removed: [], notes: [`retention on ${target} skipped: cannot list it (${err instanceof Error ? err.message : String(err)})`] };
    }
    for (const name of dirs) {
      try {
        const m = JSON.parse(await rclone.cat(`${CRYPT}:${name}/${MANIFEST}`, env)) as Manifest;
        if (m.id === name && Array.isArray(m.chain) && typeof m.completed_at === 'string') held.push(m);
        else notes.push(`${target}/${name}: its manifest names another backup; left alone`);
      } catch {
        notes.push(`${target}/${name} has no readable manifest (an interrupted upload?); left alone`);
      }
    }
    const plan = retentionPlan(held, r.days, r.now);
    const removed: string[] = [];
    for (const id of plan.remove) {
      if (id === justUploaded) continue;
      try {
        await rclone.purge(`${CRYPT}:${id}`, env);
        removed.push(id);
      } catch (err) {
        notes.push(`retention could not remove ${target}/${id}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    return { removed, notes };
  }

  /**
   * Downloads backup `id` and every backup of its chain from a target into
   * `into`, decrypting them: what a restore on a fresh host starts from.
   */
  async fetch(target: string, id: string, into: string): Promise<string[]> {
    const e = await this.env(target);
    const have = new Set((await rclone.lsjson(`${CRYPT}:`, e.env, { dirsOnly: true })).map((h) => h.Name));
    if (!have.has(id)) throw new AppError('not_found', `${target} holds no backup ${id}`);
    const get = async (one: string): Promise<void> => {
      mkdirSync(join(into, one), { recursive: true, mode: 0o700 });
      await rclone.copy(`${CRYPT}:${one}`, join(into, one), e.env);
    };
    await get(id);
    let chain: string[];
    try {
      chain = readManifest(join(into, id)).chain;
    } catch {
      throw new AppError('validation', `the copy of ${id} from ${target} has no readable manifest: is MAILSVC_BACKUP_ENCRYPTION_KEY the key it was sent with?`);
    }
    for (const other of chain) if (other !== id) {
      if (!have.has(other)) throw new AppError('not_found', `the chain of ${id} is broken on ${target}: ${other} is missing`);
      await get(other);
    }
    return chain;
  }

  /** The backup directories a target holds. */
  async list(target: string): Promise<string[]> {
    const e = await this.env(target);
    return (await rclone.lsjson(`${CRYPT}:`, e.env, { dirsOnly: true })).map((x) => x.Name).sort().reverse();
  }
}
