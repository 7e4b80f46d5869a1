import { timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../shared/clock.js';
import { AppError, badRequest } from '../../shared/errors.js';
import { requireIsoTime } from '../../shared/iso-time.js';
import { refuseControlChars } from '../../shared/mail-names.js';
import { randomId, sha256 } from '../../shared/crypto.js';
import type { ApiKeyTable } from './tables.js';
import { API_KEY_SCOPES } from '../route-types.js';
import type { ApiKeyScope } from '../route-types.js';
import type { ApiKeyRepository } from './api-key.repository.js';
import type { Static } from '@sinclair/typebox';
import type { ApiKey, ApiKeyBody, ApiKeyCreated as ApiKeyCreatedSchema } from './schema.js';

export type ApiKeyView = Omit<Static<typeof ApiKey>, 'scopes'> & { scopes: ApiKeyScope[] };
export type ApiKeyCreated = ApiKeyView & Pick<Static<typeof ApiKeyCreatedSchema>, 'key'>;
export type ApiKeyInput = Static<typeof ApiKeyBody>;
export type ApiKeyPrincipal = { id: string; name: string; scopes: ApiKeyScope[] };

/** An API key is `ak_<16>.<43>` (96 + 256 random bits); access tokens have ids of 16 characters, so the two never meet. */
const KEY = /^(ak_[A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$/;
export const MAX_LIFETIME_DAYS = 366;
const DAY = 86_400_000;

/** True when the Bearer value is shaped like an API key (not like an access token). */
export function looksLikeApiKey(value: string): boolean {
  return value.startsWith('ak_') && value.indexOf('.') === 19;
}

const isScope = (s: string): s is ApiKeyScope => (API_KEY_SCOPES as readonly string[]).includes(s);

/**
 * Scoped API keys for automation. Stored like access tokens: the id and a
 * SHA-256 of the secret, compared in constant time. Every use reads the row,
 * so a revocation holds at once on every instance.
 */
export class ApiKeyService {
  constructor(private readonly repo: ApiKeyRepository, private readonly clock: Clock) {}

  private present(r: ApiKeyTable): ApiKeyView {
    return {
      id: r.id,
      name: r.name,
      scopes: r.scopes.split(',').filter(isScope),
      created_by: r.created_by,
      created_at: new Date(r.created_at).toISOString(),
      expires_at: new Date(r.expires_at).toISOString(),
      active: r.revoked_at === null && r.expires_at > this.clock.now(),
    };
  }

  async create(input: ApiKeyInput, createdBy: string): Promise<ApiKeyCreated> {
    refuseControlChars('name', input.name);
    const name = input.name.trim();
    if (name === '' || name.length > 100) throw badRequest('name must be 1 to 100 characters, e.g. "monitoring"');
    if (input.scopes.length === 0) throw badRequest(`scopes must name at least one of: ${API_KEY_SCOPES.join(', ')}`);
    const unknown = input.scopes.find((s) => !isScope(s));
    if (unknown !== undefined) throw badRequest(`Unknown scope "${unknown}": use ${API_KEY_SCOPES.join(', ')}`);
    const scopes = [...new Set(input.scopes)] as ApiKeyScope[];
    const now = this.clock.now();
    const expiresAt = requireIsoTime('expires_at', input.expires_at);
    if (expiresAt <= now) throw badRequest('expires_at must be in the future');
    if (expiresAt > now + MAX_LIFETIME_DAYS * DAY) throw badRequest(`expires_at must be at most ${MAX_LIFETIME_DAYS} days ahead`);
    const id = `ak_${randomId(12)}`;
    const secret = randomId(32);
    const row: ApiKeyTable = {
      id,
      name,
      secret_hash: sha256(secret).toString('hex'),
      scopes: scopes.join(','),
      created_by: createdBy.slice(0, 255),
      created_at: now,
      expires_at: expiresAt,
      revoked_at: null,
    };
    await this.repo.insert(row);
    return { ...this.present(row), key: `${id}.${secret}` };
  }

  /** Keys not revoked, expired ones included (active false); never the secret. */
  async list(): Promise<ApiKeyView[]> {
    return (await this.repo.listLive()).map((r) => this.present(r));
  }

  async revoke(id: string): Promise<void> {
    if (!(await this.repo.revoke(id, this.clock.now()))) throw new AppError('not_found', `No API key ${id} (or it is revoked already)`);
  }

  /** The key's identity and scopes, or null when it is unknown, wrong, expired or revoked. */
  async validate(key: string): Promise<ApiKeyPrincipal | null> {
    const m = KEY.exec(key);
    if (!m) return null;
    const [, id = '', secret = ''] = m;
    const row = await this.repo.findById(id);
    // Hash and compare even for an unknown id, so timing does not tell which part was wrong.
    const given = sha256(secret);
    const stored = row ? Buffer.from(row.secret_hash, 'hex') : Buffer.alloc(given.length);
    const match = stored.length === given.length && timingSafeEqual(given, stored);
    if (!row || !match || row.revoked_at !== null || row.expires_at <= this.clock.now()) return null;
    return { id: row.id, name: row.name, scopes: row.scopes.split(',').filter(isScope) };
  }
}
