import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { sha256, hmacSha256 } from './crypto.js';
import { AppError } from './errors.js';

type Key = { id: string; bytes: Buffer };

function keyId(bytes: Buffer): string {
  return sha256(bytes).subarray(0, 4).toString('hex');
}

/**
 * AES-256-GCM envelope for secrets at rest: `v1.<key id>.<iv>.<tag>.<ciphertext>`
 * (base64url parts). The key id names the key that sealed the value, so older
 * keys can stay in the ring while `secrets rotate-key` re-seals under the new one.
 */
export class SecretBox {
  private readonly primary: Key;
  private readonly byId: Map<string, Key>;

  constructor(primary: Buffer, previous: Buffer[] = []) {
    if (primary.length !== 32) throw new Error('secret key must be 32 bytes');
    this.primary = { id: keyId(primary), bytes: primary };
    this.byId = new Map([primary, ...previous].map((b) => [keyId(b), { id: keyId(b), bytes: b }]));
  }

  get keyId(): string {
    return this.primary.id;
  }

  seal(plain: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.primary.bytes, iv);
    cipher.setAAD(Buffer.from(context));
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const parts = [iv, cipher.getAuthTag(), ct].map((b) => b.toString('base64url'));
    return ['v1', this.primary.id, ...parts].join('.');
  }

  open(sealed: string, context: string): string {
    const [version, id, iv, tag, ct] = sealed.split('.');
    const key = id === undefined ? undefined : this.byId.get(id);
    if (version !== 'v1' || iv === undefined || tag === undefined || ct === undefined) {
      throw new AppError('internal', 'A stored secret is not in the expected format');
    }
    if (!key) {
      throw new AppError('internal', `A stored secret is sealed with key ${id}, which is not loaded: set MAILSVC_SECRET_KEY_PREVIOUS`);
    }
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }

  sealedWith(sealed: string): string | undefined {
    return sealed.split('.')[1];
  }

  /** A key for HMACs of short-lived codes, derived from the primary key. */
  derive(purpose: string): Buffer {
    return hmacSha256(this.primary.bytes, `mailsvc:${purpose}`);
  }
}
