import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../../shared/clock.js';
import { hmacSha256, randomId } from '../../shared/crypto.js';
import type { RecoveryCodeRepository } from './recovery-code.repository.js';

export const RECOVERY_CODE_COUNT = 10;
// Letters and digits that cannot be mistaken for one another when copied from paper.
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
const GROUP = 5;

function newCode(): string {
  const bytes = randomBytes(GROUP * 2);
  // 31 symbols: a byte modulo 31 is biased by under 1 %, which costs a fraction of a bit of 49.
  const chars = [...bytes].map((b) => ALPHABET[b % ALPHABET.length]).join('');
  return `${chars.slice(0, GROUP)}-${chars.slice(GROUP)}`;
}

/** What the user may type: any case, with or without the hyphen and spaces. */
function normalize(code: string): string {
  return code.toLowerCase().replace(/[\s-]/g, '');
}

/**
 * Single-use recovery codes for a lost authenticator: made when TOTP is
 * confirmed (shown once), kept as HMAC-SHA256 under a key derived from the
 * secret key, so the table alone does not allow guessing them offline.
 */
export class RecoveryCodeService {
  private count: number | null = null;
  /** Bumped by every write: a count read while one ran is not kept. */
  private generation = 0;

  /**
   * `cache`: keep the number of unused codes in memory between writes (it is
   * in every MFA status). Only for a single instance (no Redis), like the MFA
   * record: every write goes through this object or a host command that
   * signals the service to drop it.
   */
  constructor(
    private readonly repo: RecoveryCodeRepository,
    private readonly key: Buffer,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly cache = false,
    /** Told of every code used (the audit log): a sign-in without the authenticator is worth a record. */
    private readonly onUsed: (event: { ip: string; remaining: number }) => Promise<unknown> = () => Promise.resolve(),
  ) {}

  private changed(): void {
    this.count = null;
    this.generation += 1;
  }

  dropCache(): void {
    this.changed();
  }

  private hash(code: string): string {
    return hmacSha256(this.key, normalize(code)).toString('hex');
  }

  /** A new set of codes; the old set stops working. The codes are in this answer only. */
  async regenerate(): Promise<string[]> {
    const now = this.clock.now();
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newCode);
    this.changed();
    try {
      await this.repo.replaceAll(codes.map((c) => ({ id: randomId(12), code_hash: this.hash(c), created_at: now, used_at: null })));
    } finally {
      this.changed();
    }
    return codes;
  }

  async remaining(): Promise<number> {
    if (this.count !== null) return this.count;
    const generation = this.generation;
    const n = await this.repo.countUnused();
    if (this.cache && generation === this.generation) this.count = n;
    return n;
  }

  async erase(): Promise<void> {
    this.changed();
    try {
      await this.repo.deleteAll();
    } finally {
      this.changed();
    }
  }

  /** True once per code: the code is used up in the same statement that checks it. */
  async use(code: string, ip: string): Promise<boolean> {
    const normalized = normalize(code);
    if (normalized.length !== GROUP * 2) return false;
    this.changed();
    const used = await this.repo.markUsed(this.hash(normalized), this.clock.now());
    this.changed();
    if (!used) return false;
    const remaining = await this.repo.countUnused();
    this.log.warn({ event: 'mfa.recovery_code_used', ip, remaining }, `a recovery code was used to sign in; ${remaining} left`);
    await this.onUsed({ ip, remaining }).catch((err: unknown) =>
      this.log.error({ err: { message: err instanceof Error ? err.message : String(err) } }, 'the use of a recovery code could not be recorded in the audit log'),
    );
    return true;
  }
}
