import type { Redis } from 'ioredis';
import type { Clock } from '../../shared/clock.js';

import { METHODS } from '../mfa/index.js';
import type { Factor, Method } from '../mfa/index.js';

export type { Factor, Method };
export const MAX_CODE_FAILURES = 5;
export const MAX_SMS_SENDS = 3;

/**
 * What a challenge is for: the sign-in after the password (`signin`), a
 * passkey sign-in without a password (`passwordless`), or the registration of
 * a passkey (`registration`). Only a `signin` challenge is answered by a code.
 */
export type ChallengeKind = 'signin' | 'passwordless' | 'registration';
const KINDS: readonly ChallengeKind[] = ['signin', 'passwordless', 'registration'];

export type Challenge = {
  id: string;
  kind: ChallengeKind;
  subject: string;
  methods: Method[];
  expiresAt: number;
  failures: number;
  smsSends: number;
  smsCodeHash: string | null;
  /** The WebAuthn challenge of the ceremony in progress, taken once. */
  webauthn: WebauthnChallenge | null;
};

/**
 * A WebAuthn challenge (base64url) and when it stops being accepted: its own
 * time (MAILSVC_WEBAUTHN_TIMEOUT after the options), never the longer life of
 * the sign-in challenge it is kept with.
 */
export type WebauthnChallenge = { challenge: string; expiresAt: number };

export type SmsReservation = 'ok' | 'missing' | 'limit';

/**
 * Pending sign-ins. Every change is atomic so that parallel requests can
 * neither use a challenge twice nor get past the failure and send caps.
 */
export type ChallengeStore = {
  create(c: Challenge): Promise<void>;
  get(id: string): Promise<Challenge | null>;
  /** Counts a wrong code; the challenge dies at MAX_CODE_FAILURES. */
  recordFailure(id: string): Promise<void>;
  /** Counts an SMS send and stores the new code's hash, unless the cap is reached. */
  reserveSmsSend(id: string, codeHash: string): Promise<SmsReservation>;
  /** Removes the challenge; true only for the one caller that removed it. */
  consume(id: string): Promise<boolean>;
  /** Sets the WebAuthn challenge of a live challenge (replacing an earlier one); false when it is gone. */
  setWebauthn(id: string, webauthn: WebauthnChallenge): Promise<boolean>;
  /**
   * Reads and clears the WebAuthn challenge in one step: of parallel callers
   * one gets it. null when there is none or it has expired (cleared all the same).
   */
  takeWebauthn(id: string): Promise<string | null>;
};

export class MemoryChallengeStore implements ChallengeStore {
  private readonly items = new Map<string, Challenge>();
  constructor(private readonly clock: Clock) {}

  private live(id: string): Challenge | null {
    const c = this.items.get(id);
    if (!c) return null;
    if (c.expiresAt <= this.clock.now()) {
      this.items.delete(id);
      return null;
    }
    return c;
  }

  create(c: Challenge): Promise<void> {
    for (const [id, item] of this.items) if (item.expiresAt <= this.clock.now()) this.items.delete(id);
    this.items.set(c.id, { ...c });
    return Promise.resolve();
  }
  get(id: string): Promise<Challenge | null> {
    const c = this.live(id);
    return Promise.resolve(c ? { ...c, methods: [...c.methods] } : null);
  }
  setWebauthn(id: string, webauthn: WebauthnChallenge): Promise<boolean> {
    const c = this.live(id);
    if (c) c.webauthn = { ...webauthn };
    return Promise.resolve(c !== null);
  }
  takeWebauthn(id: string): Promise<string | null> {
    const c = this.live(id);
    const value = c?.webauthn ?? null;
    if (c) c.webauthn = null;
    return Promise.resolve(value !== null && value.expiresAt > this.clock.now() ? value.challenge : null);
  }
  recordFailure(id: string): Promise<void> {
    const c = this.live(id);
    if (c && ++c.failures >= MAX_CODE_FAILURES) this.items.delete(id);
    return Promise.resolve();
  }
  reserveSmsSend(id: string, codeHash: string): Promise<SmsReservation> {
    const c = this.live(id);
    if (!c) return Promise.resolve('missing');
    if (c.smsSends >= MAX_SMS_SENDS) return Promise.resolve('limit');
    c.smsSends += 1;
    c.smsCodeHash = codeHash;
    return Promise.resolve('ok');
  }
  consume(id: string): Promise<boolean> {
    return Promise.resolve(this.live(id) !== null && this.items.delete(id));
  }
}

const RESERVE_SMS = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local n = redis.call('HINCRBY', KEYS[1], 'sms_sends', 1)
if n > tonumber(ARGV[1]) then redis.call('HINCRBY', KEYS[1], 'sms_sends', -1) return -1 end
redis.call('HSET', KEYS[1], 'sms_code', ARGV[2])
return 1`;

const SET_WEBAUTHN = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'webauthn', ARGV[1], 'webauthn_expires_at', ARGV[2])
return 1`;

// ARGV[1]: now (the service's clock, as get() compares expires_at). A challenge without its
// own expiry (written before it had one) counts as expired.
const TAKE_WEBAUTHN = `
local v = redis.call('HGET', KEYS[1], 'webauthn')
if not v or v == '' then return false end
local e = tonumber(redis.call('HGET', KEYS[1], 'webauthn_expires_at') or '') or 0
redis.call('HSET', KEYS[1], 'webauthn', '')
if e <= tonumber(ARGV[1]) then return false end
return v`;

const RECORD_FAILURE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local n = redis.call('HINCRBY', KEYS[1], 'failures', 1)
if n >= tonumber(ARGV[1]) then redis.call('DEL', KEYS[1]) end
return n`;

/** Challenges in Redis, shared by every API instance; Redis expires them. */
export class RedisChallengeStore implements ChallengeStore {
  constructor(private readonly redis: Redis, private readonly clock: Clock) {}

  private key(id: string): string {
    return `mailsvc:challenge:${id}`;
  }

  async create(c: Challenge): Promise<void> {
    const ttl = Math.max(1, c.expiresAt - this.clock.now());
    await this.redis
      .multi()
      .hset(this.key(c.id), {
        subject: c.subject,
        kind: c.kind,
        webauthn: c.webauthn?.challenge ?? '',
        webauthn_expires_at: String(c.webauthn?.expiresAt ?? 0),
        methods: c.methods.join(','),
        expires_at: String(c.expiresAt),
        failures: String(c.failures),
        sms_sends: String(c.smsSends),
        sms_code: c.smsCodeHash ?? '',
      })
      .pexpire(this.key(c.id), ttl)
      .exec();
  }

  async get(id: string): Promise<Challenge | null> {
    const h = await this.redis.hgetall(this.key(id));
    if (h.subject === undefined) return null;
    const expiresAt = Number(h.expires_at);
    if (expiresAt <= this.clock.now()) return null;
    return {
      id,
      // A challenge written before passkeys existed is a sign-in challenge.
      kind: (KINDS as readonly string[]).includes(h.kind ?? '') ? (h.kind as ChallengeKind) : 'signin',
      subject: h.subject,
      methods: (h.methods ?? '').split(',').filter((m): m is Method => (METHODS as string[]).includes(m)),
      expiresAt,
      failures: Number(h.failures ?? 0),
      smsSends: Number(h.sms_sends ?? 0),
      smsCodeHash: h.sms_code ? h.sms_code : null,
      webauthn: h.webauthn ? { challenge: h.webauthn, expiresAt: Number(h.webauthn_expires_at ?? 0) } : null,
    };
  }

  async recordFailure(id: string): Promise<void> {
    await this.redis.eval(RECORD_FAILURE, 1, this.key(id), String(MAX_CODE_FAILURES));
  }

  async reserveSmsSend(id: string, codeHash: string): Promise<SmsReservation> {
    const r = Number(await this.redis.eval(RESERVE_SMS, 1, this.key(id), String(MAX_SMS_SENDS), codeHash));
    return r === 1 ? 'ok' : r === 0 ? 'missing' : 'limit';
  }

  async consume(id: string): Promise<boolean> {
    return (await this.redis.del(this.key(id))) === 1;
  }

  async setWebauthn(id: string, webauthn: WebauthnChallenge): Promise<boolean> {
    return Number(await this.redis.eval(SET_WEBAUTHN, 1, this.key(id), webauthn.challenge, String(webauthn.expiresAt))) === 1;
  }

  async takeWebauthn(id: string): Promise<string | null> {
    const v = await this.redis.eval(TAKE_WEBAUTHN, 1, this.key(id), String(this.clock.now()));
    return typeof v === 'string' && v !== '' ? v : null;
  }
}
