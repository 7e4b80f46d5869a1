import { AppError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import type { Db } from '../../db/database.js';
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
  /** Renders Rspamd's signing files from these keys and reloads it (through the root helper). */
  applySigning: (keys: readonly SigningKey[]) => Promise<SigningOutcome>;
  /** Deletes the key files of selectors that no longer sign (through the root helper). */
  removeKeyFiles: (domain: string, selectors: readonly string[]) => Promise<void>;
};

/**
 * DKIM keys: made here (private key sealed at once, never returned), signed
 * with by Rspamd once active. A domain's first key signs at once (nothing was
 * published before it, so nothing can break); a later key only through the
 * rotation, which waits until the new record is visible everywhere.
 */
export class DkimService {
  constructor(private readonly d: DkimDeps) {}

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
    const made = await this.makeKeys(name, 'active', opts.ed25519);
    let signing: SigningOutcome;
    try {
      signing = await this.syncSigning();
    } catch (err) {
      // Keys that never signed are dropped, so the same command can be run again once the cause is fixed.
      await this.d.repo.remove(made.map((k) => k.id));
      throw err;
    }
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
    return this.d.applySigning(rows.map((r) => this.signingKey(r)));
  }

  private signingKey(r: DkimKeyRow): SigningKey {
    return { domain: r.domain, selector: r.selector, algorithm: r.algorithm as DkimAlgorithm, privateKey: this.d.box().open(r.private_key, sealContext('dkim_keys', r.id, 'private_key')) };
  }

  /**
   * Before a domain is deleted: Rspamd's signing configuration re-applied
   * without it, then the key files of all its selectors removed (root
   * helper). Nothing stored changes, so a failure is undone by putting
   * signing back as stored (`syncSigning`, which installs the key files
   * again). A domain without keys does not reach the helper.
   */
  async stopSigning(domain: string): Promise<void> {
    const live = await this.d.repo.listLive(domain);
    if (live.length === 0) return;
    const rows = (await this.d.repo.listActive()).filter((r) => r.domain !== domain);
    await this.d.applySigning(rows.map((r) => this.signingKey(r)));
    try {
      await this.d.removeKeyFiles(domain, live.map((k) => k.selector));
    } catch (err) {
      const text = (e: unknown): string => (e instanceof AppError ? e.detail : e instanceof Error ? e.message : String(e));
      const back = await this.syncSigning().then(
        () => '',
        (e: unknown) => `; Rspamd's signing could not be put back either (${text(e)}): run mailsvc dns sync-signing`,
      );
      if (!back) throw err;
      throw new AppError(err instanceof AppError ? err.code : 'upstream', `${text(err)}${back}`);
    }
  }

  /** A deleted domain, in the delete's transaction: see DkimRepository.forgetDomain. */
  forgetDomain(tx: Db, domain: string): Promise<void> {
    return this.d.repo.forgetDomain(tx, domain, this.d.clock.now());
  }

  /** Deletes the key files of retired selectors (Rspamd must no longer sign with them: the helper refuses otherwise). */
  removeKeyFiles(domain: string, selectors: readonly string[]): Promise<void> {
    return this.d.removeKeyFiles(domain, selectors);
  }
}
