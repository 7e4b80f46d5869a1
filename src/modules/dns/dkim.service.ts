import { AppError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import type { SecretBox } from '../../shared/secret-box.js';
import { sealContext } from '../../db/sealed-columns.js';
import type { DomainLookup } from '../domains/index.js';
import { dkimRecordValue, generateDkimKey, nextSelector } from './dkim-keygen.js';
import type { DkimAlgorithm } from './dkim-keygen.js';
import type { DkimKeyRow, DkimRepository, DkimState } from './dkim.repository.js';
import type { SigningKey, SigningOutcome } from './dkim-signing.js';
import type { DkimKeyView, DkimResult } from './schema.js';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export const presentKey = (r: DkimKeyRow): DkimKeyView => ({
  selector: r.selector,
  algorithm: r.algorithm as DkimAlgorithm,
  bits: r.bits,
  state: r.state as DkimState,
  record_name: `${r.selector}._domainkey.${r.domain}`,
  record_value: dkimRecordValue(r.algorithm as DkimAlgorithm, r.public_key),
  created_at: new Date(r.created_at).toISOString(),
  activated_at: iso(r.activated_at),
});

export type DkimDeps = {
  repo: DkimRepository;
  domains: Pick<DomainLookup, 'resolve'>;
  /** Opened on first use: commands that never touch a private key need no key file. */
  box: () => SecretBox;
  clock: Clock;
  /** The limit dkim-key-bits, read per call. */
  keyBits: () => number;
  /** MAILSVC_DKIM_ED25519: an Ed25519 key with every new RSA key. */
  ed25519ByDefault: boolean;
  /** Renders Rspamd's signing files from these keys and reloads it. */
  applySigning: (keys: readonly SigningKey[]) => Promise<SigningOutcome>;
};

/**
 * DKIM keys: made here (private key sealed at once, never returned), signed
 * with by Rspamd once active. A domain's first key signs at once (nothing was
 * published before it, so nothing can break); a later key only through the
 * rotation, which waits until the new record is visible everywhere.
 */
export class DkimService {
  constructor(private readonly d: DkimDeps) {}

  /** Makes new keys (RSA, and Ed25519 when asked) in state `state`; the rows as stored. */
  /** The selector the next keys of a domain get. */
  async nextSelector(domain: string): Promise<string> {
    return nextSelector(this.d.clock.now(), await this.d.repo.selectors(domain));
  }

  /** Makes new keys (RSA, and Ed25519 when asked) in state `state` under `selector` (default: the next one); the rows as stored. */
  async makeKeys(domain: string, state: DkimState, ed25519?: boolean, given?: string): Promise<DkimKeyRow[]> {
    const now = this.d.clock.now();
    const selector = given ?? (await this.nextSelector(domain));
    const wanted: { algorithm: DkimAlgorithm; selector: string }[] = [{ algorithm: 'rsa', selector }];
    if (ed25519 ?? this.d.ed25519ByDefault) wanted.push({ algorithm: 'ed25519', selector: `${selector}e` });
    const rows: DkimKeyRow[] = [];
    for (const w of wanted) {
      const key = await generateDkimKey(w.algorithm, w.algorithm === 'rsa' ? this.d.keyBits() : 256);
      const id = `${domain}/${w.selector}`;
      rows.push({
        id,
        domain,
        selector: w.selector,
        algorithm: w.algorithm,
        bits: key.bits,
        public_key: key.publicKey,
        private_key: this.d.box().seal(key.privateKey, sealContext('dkim_keys', id, 'private_key')),
        state,
        created_at: now,
        activated_at: state === 'active' ? now : null,
        retired_at: null,
      });
    }
    await this.d.repo.insert(rows);
    return rows;
  }

  /** The first keys of a domain, signing at once. A domain that has keys is 409: rotate them instead. */
  async generate(domainName: string, opts: { ed25519?: boolean } = {}): Promise<DkimResult> {
    const { name } = await this.d.domains.resolve(domainName);
    const live = await this.d.repo.listLive(name);
    if (live.length > 0) {
      throw new AppError('conflict', `Domain ${name} already has DKIM keys (selector ${live.map((k) => k.selector).join(', ')}): rotate them with mailsvc dns rotate-dkim ${name}`);
    }
    await this.makeKeys(name, 'active', opts.ed25519);
    const signing = await this.syncSigning();
    return { domain: name, keys: (await this.d.repo.listLive(name)).map(presentKey), signing };
  }

  async keys(domainName: string): Promise<DkimKeyView[]> {
    const { name } = await this.d.domains.resolve(domainName);
    return (await this.d.repo.listLive(name)).map(presentKey);
  }

  /** Moves keys of a domain to another state (the rotation). */
  setState(domain: string, selectors: readonly string[], state: DkimState): Promise<void> {
    return this.d.repo.setState(domain, selectors, state, this.d.clock.now());
  }

  /** The published keys of a domain (pending, active, retiring), as stored: for the plan and the checks. */
  liveRows(domain: string): Promise<DkimKeyRow[]> {
    return this.d.repo.listLive(domain);
  }

  /** Rspamd signs with exactly the active keys of every domain. */
  async syncSigning(): Promise<SigningOutcome> {
    const rows = await this.d.repo.listActive();
    const keys = rows.map((r) => ({ domain: r.domain, selector: r.selector, privateKey: this.d.box().open(r.private_key, sealContext('dkim_keys', r.id, 'private_key')) }));
    return this.d.applySigning(keys);
  }
}
