import { remoteEnv } from '../../adapters/rclone/index.js';
import { AppError } from '../../shared/errors.js';

/**
 * What root's rclone may take from the service's database (decisions §10: a
 * root unit reads the service's rows only as values it validates against an
 * allow-list of their meaning). A remote's definition (its type, host, URL,
 * every option that names a path, a program or another remote) is root's: it
 * comes only from root's environment or root's backup-secrets file
 * (`RCLONE_CONFIG_<REMOTE>_*` in /etc/mailsvc/backup-secrets.conf, root:root
 * 0600). What the service may store (sealed, in
 * backup_secrets) is a remote's *secrets*: per backend type, the options
 * below, each a plain value of the kind named. Anything else is refused when
 * stored and refused again when root reads it.
 */
export type SecretKind = 'secret' | 'pem';

/** The backend types a target may be (network storage; never local, alias, union, crypt, or any that names another remote or a path), and the options of each the service may store. */
export const REMOTE_BACKENDS: Readonly<Record<string, Readonly<Record<string, SecretKind>>>> = {
  sftp: { pass: 'secret', key_pem: 'pem', key_file_pass: 'secret' },
  webdav: { pass: 'secret', bearer_token: 'secret' },
  ftp: { pass: 'secret' },
  s3: { access_key_id: 'secret', secret_access_key: 'secret', session_token: 'secret' },
  b2: { account: 'secret', key: 'secret' },
  swift: { key: 'secret' },
  azureblob: { key: 'secret' },
};

/** Options rclone wants obscured in its configuration. */
export const OBSCURED = new Set(['pass', 'key_file_pass']);

/** The crypt remote mailsvc layers over each target: no target or stored credential may name it. */
export const CRYPT_REMOTE = 'mailsvccrypt';

const MAX_SECRET = 1024;
const MAX_PEM = 16_384;
const PEM = /^-----BEGIN [A-Z0-9 ]{1,40}-----\r?\n[A-Za-z0-9+/=:,\- \r\n]{1,16000}-----END [A-Z0-9 ]{1,40}-----\r?\n?$/;

/** The environment name rclone reads one option of a remote from. */
export const envName = (remote: string, option: string): string => Object.keys(remoteEnv(remote, { [option]: '' }))[0] as string;

/** A remote name stored secrets may belong to: letters, digits, underscores; never the crypt layer's. */
export function remoteNameProblem(remote: string): string | null {
  if (!/^[A-Za-z0-9_]{1,64}$/.test(remote)) return `"${clip(remote)}" is not an rclone remote name (letters, digits, underscores, up to 64)`;
  if (remote.toLowerCase() === CRYPT_REMOTE) return `"${CRYPT_REMOTE}" is the encryption layer mailsvc puts over each target, not a remote of yours`;
  return null;
}

const clip = (s: string): string => (s.length > 40 ? `${s.slice(0, 40)}…` : s).replace(/[^\x20-\x7e]/g, '?');

/** Why a value is not a plain `kind` (null: it is). The value is never quoted: it is a secret. */
export function secretValueProblem(kind: SecretKind, value: string): string | null {
  if (kind === 'pem') return value.length <= MAX_PEM && PEM.test(value) ? null : 'must be one PEM block (-----BEGIN …----- to -----END …-----), at most 16 KiB';
  // eslint-disable-next-line no-control-regex
  if (value.length === 0 || value.length > MAX_SECRET || /[\x00-\x1f\x7f]/.test(value)) return `must be 1 to ${MAX_SECRET} characters without control characters or line breaks`;
  return null;
}

/** The options of `type` the service may store, or null when `type` is not an allowed backend. */
export const secretOptionsOf = (type: string | undefined): Readonly<Record<string, SecretKind>> | null => (type !== undefined && Object.hasOwn(REMOTE_BACKENDS, type) ? (REMOTE_BACKENDS[type] ?? null) : null);

/** The option names the service may store for some backend. */
const ANY_SECRET = new Map<string, SecretKind>(Object.values(REMOTE_BACKENDS).flatMap((o) => Object.entries(o)));

/**
 * Checks one credential before it is stored. `type`: the remote's type as
 * the writer's environment defines it (unknown to the service, whose
 * environment does not hold root's definitions: then the option must be a
 * secret of some allowed backend, and the root run checks it against the type).
 * Throws AppError('validation') naming what is allowed; the value is never quoted.
 */
export function checkCredential(remote: string, option: string, value: string, type: string | undefined): void {
  const bad = remoteNameProblem(remote);
  if (bad) throw new AppError('validation', bad);
  const o = option.toLowerCase();
  const allowed = type !== undefined ? secretOptionsOf(type) : null;
  if (type !== undefined && allowed === null) throw new AppError('validation', `${remote} is of type ${clip(type)}, which mailsvc does not send backups to (allowed: ${Object.keys(REMOTE_BACKENDS).join(', ')})`);
  const table: Readonly<Record<string, SecretKind>> = allowed ?? Object.fromEntries(ANY_SECRET);
  const kind = Object.hasOwn(table, o) ? table[o] : undefined;
  if (kind === undefined) {
    throw new AppError('validation', `"${clip(option)}" is not a secret mailsvc stores for ${allowed ? `a ${type ?? ''} remote` : 'a remote'} (only ${Object.keys(table).join(', ')}); the remote's type, host, URL and every other option are root's: set RCLONE_CONFIG_${remote.toUpperCase()}_<OPTION> in /etc/mailsvc/backup-secrets.conf (root:root 0600)`);
  }
  const problem = secretValueProblem(kind, value);
  if (problem) throw new AppError('validation', `${remote}.${o} ${problem}`);
}

/** A run refused because of what the service stored (CLI exit 1, a failed job): nothing was executed. */
export class RemoteRefused extends AppError {
  constructor(detail: string) {
    super('validation', `refusing the remote target, nothing was run: ${detail}`);
  }
}

/**
 * The rclone environment of one remote for a root run: root's own
 * `RCLONE_CONFIG_<REMOTE>_*` (its definition; its TYPE must be an allowed
 * backend), then the stored secrets, each checked again against that type.
 * Throws RemoteRefused for anything else.
 */
export function remoteEnvFor(remote: string, rootEnv: Readonly<Record<string, string | undefined>>, stored: Readonly<Record<string, string>>): Record<string, string> {
  const bad = remoteNameProblem(remote);
  if (bad) throw new RemoteRefused(bad);
  const type = rootEnv[envName(remote, 'type')];
  if (type === undefined || type === '') throw new RemoteRefused(`${remote} is not defined by root: set RCLONE_CONFIG_${remote.toUpperCase()}_TYPE (and its host or URL) in /etc/mailsvc/backup-secrets.conf (root:root 0600)`);
  const allowed = secretOptionsOf(type);
  if (!allowed) throw new RemoteRefused(`${remote} is of type ${clip(type)}, which mailsvc does not send backups to (allowed: ${Object.keys(REMOTE_BACKENDS).join(', ')})`);
  const out: Record<string, string> = {};
  for (const [option, value] of Object.entries(stored)) {
    const kind = Object.hasOwn(allowed, option) ? allowed[option] : undefined;
    if (kind === undefined) throw new RemoteRefused(`the stored option "${clip(option)}" of ${remote} is not one mailsvc takes from its database for a ${type} remote (only ${Object.keys(allowed).join(', ')})`);
    // A stored password is kept obscured (rclone's form), so its length and characters are what the check sees.
    const problem = secretValueProblem(kind, value);
    if (problem) throw new RemoteRefused(`the stored ${remote}.${option} ${problem}`);
    out[envName(remote, option)] = value;
  }
  return out;
}
