import { randomBytes } from 'node:crypto';
import type { NftClient } from '../../adapters/nftables/nft.js';
import { AppError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import { parseLooseNet } from '../../shared/ip-net.js';
import type { FirewallRepository } from './firewall.repository.js';
import { HELPER_LIST_ARG_MAX } from '../../shared/dkim-names.js';
import { allows, parsePorts, parseRules } from './rules.js';
import type { FirewallRule, FirewallState } from './rules.js';

export type FirewallView = FirewallState & { confirm_by?: string };
/**
 * Who asks, for the lockout guard: the address and the way the request came
 * (the API port, SSH for the CLI, or a trusted proxy's port), or a request
 * that an untrusted proxy on loopback forwarded; null: nobody to protect.
 */
export type FirewallCaller = { address: string; via: 'api' | 'ssh' } | { address: string; via: 'proxy'; port: number } | { via: 'untrusted-proxy' } | null;
export type FirewallChange = { 'firewall-enabled'?: unknown; 'firewall-rules-json'?: unknown };
/** Arranges for `revertUnconfirmed(id)` to run after `seconds`, even if the caller's process ends. */
export type RevertScheduler = (id: string, seconds: number) => void;

const DEFAULT: FirewallState = { 'firewall-enabled': 'no', 'firewall-rules-json': [] };

export class FirewallService {
  constructor(
    private readonly repo: FirewallRepository,
    private readonly nft: Pick<NftClient, 'apply'>,
    private readonly clock: Clock,
    private readonly opts: { revertSeconds: number; sshPort: number; apiPort: number },
  ) {}

  async get(): Promise<FirewallView> {
    const row = await this.repo.get();
    if (!row) return { ...DEFAULT };
    const view: FirewallView = { 'firewall-enabled': row.enabled === 'yes' ? 'yes' : 'no', 'firewall-rules-json': JSON.parse(row.rules_json) as FirewallRule[] };
    if (row.pending_id !== null && row.pending_deadline !== null) view.confirm_by = new Date(row.pending_deadline).toISOString();
    return view;
  }

  /** The new state from a change: unknown keys and bad values are 422 naming the key; nothing is applied. */
  parse(current: FirewallState, change: FirewallChange): FirewallState {
    const next: FirewallState = { ...current };
    const en = change['firewall-enabled'];
    if (en !== undefined) {
      if (en !== 'yes' && en !== 'no') throw new AppError('validation', 'firewall-enabled: must be yes or no', { errors: [{ path: 'firewall-enabled', message: 'must be yes or no' }] });
      next['firewall-enabled'] = en;
    }
    if (change['firewall-rules-json'] !== undefined) next['firewall-rules-json'] = parseRules(change['firewall-rules-json']);
    // The helper takes the state as one argument of its request line: measured as it travels (JSON-escaped).
    const size = JSON.stringify(JSON.stringify(next)).length;
    if (size > HELPER_LIST_ARG_MAX) {
      const message = `the rules take ${size} characters as sent to the privileged helper, at most ${HELPER_LIST_ARG_MAX} fit: use fewer rules or port groups and ranges`;
      throw new AppError('validation', `firewall-rules-json: ${message}`, { errors: [{ path: 'firewall-rules-json', message }] });
    }
    return next;
  }

  /**
   * Why this state would cut the calling administrator off, or null. SSH is
   * always protected; so is the way this request came: the API's own port, or,
   * through a trusted proxy (nginx in front), the port the proxy served it on.
   * A caller on loopback with no proxy in between cannot be cut off (lo is
   * always accepted). A request that a proxy on loopback forwarded without
   * being trusted hides the administrator's address: it is refused too, since
   * the guard cannot know whom it would lock out.
   */
  lockout(state: FirewallState, caller: FirewallCaller): string | null {
    if (state['firewall-enabled'] !== 'yes' || caller === null) return null;
    if (caller.via === 'untrusted-proxy') {
      return 'this request came through a proxy on loopback (X-Forwarded-For) that MAILSVC_TRUSTED_PROXIES does not name, so the address you are calling from is unknown and the guard cannot keep it open. Add the proxy to MAILSVC_TRUSTED_PROXIES (e.g. 127.0.0.1)';
    }
    const from = parseLooseNet(caller.address);
    if (!from || (from.addr as { range(): string }).range() === 'loopback') return null;
    const ports = [
      { port: this.opts.sshPort, what: 'SSH' },
      caller.via === 'proxy' ? { port: caller.port, what: 'the panel and API through the proxy' } : { port: this.opts.apiPort, what: 'the API' },
    ];
    const closed = ports.filter((p) => p.port > 0 && !allows(state['firewall-rules-json'], from, p.port, 'tcp'));
    if (closed.length === 0) return null;
    const why = closed.map((c) => `${c.port}/tcp: ${this.coverage(state, c.port)}`).join('; ');
    return `this ruleset closes ${closed.map((c) => `${c.what} (${c.port}/tcp)`).join(' and ')} to ${from.text}, the address you are calling from (${why})`;
  }

  /** Which enabled rules open `port`/tcp, and to whom: what the refusal says about each closed port. */
  private coverage(state: FirewallState, port: number): string {
    const open = state['firewall-rules-json']
      .map((r, i) => ({ r, i }))
      .filter(({ r }) => r.enabled === 'yes' && r.protocol === 'tcp' && parsePorts(r.ports, 'ports').some(([a, b]) => port >= a && port <= b));
    if (open.length === 0) return 'no enabled rule opens it';
    // A rule without a source would have let the caller in: the ones left are limited to other sources.
    return `only ${open.map(({ r, i }) => `rule ${i + 1} (from ${r.source})`).join(', ')} opens it, not to this address`;
  }

  /**
   * Checks the state and has the helper apply it (it renders the table, nft
   * -c -f, then nft -f: the old table stays when either fails), then stores it. A state that locks the
   * caller out is refused (409) unless forced; a forced one reverts after
   * `revertSeconds` unless confirmed.
   */
  async set(change: FirewallChange, caller: FirewallCaller, force: boolean, schedule: RevertScheduler): Promise<FirewallView> {
    const row = await this.repo.get();
    const current = await this.get();
    const next = this.parse(current, change);
    const why = this.lockout(next, caller);
    if (why && !force) throw new AppError('conflict', `${why}; nothing changed. Add an accept rule for it, or force it (--force / force=true) and confirm within ${this.opts.revertSeconds} s`);
    await this.apply(next);
    const now = this.clock.now();
    const pendingId = why ? randomBytes(12).toString('hex') : null;
    // A forced change on top of an unconfirmed one keeps the state from before both.
    const previous = row?.pending_id ? { enabled: row.previous_enabled, rules: row.previous_rules_json } : { enabled: current['firewall-enabled'], rules: JSON.stringify(current['firewall-rules-json']) };
    await this.repo.put({
      enabled: next['firewall-enabled'],
      rules_json: JSON.stringify(next['firewall-rules-json']),
      updated_at: now,
      pending_id: pendingId,
      pending_deadline: pendingId ? now + this.opts.revertSeconds * 1000 : null,
      previous_enabled: pendingId ? previous.enabled : null,
      previous_rules_json: pendingId ? previous.rules : null,
    });
    if (pendingId) schedule(pendingId, this.opts.revertSeconds);
    return this.get();
  }

  /**
   * After a restart: a forced change still waiting for confirmation gets its
   * revert timer again, for the time left (none left: it reverts now). The
   * timer of the process that forced it died with that process.
   */
  async resumePending(schedule: RevertScheduler): Promise<string | null> {
    const row = await this.repo.get();
    if (!row?.pending_id || row.pending_deadline === null) return null;
    schedule(row.pending_id, Math.max(0, Math.ceil((row.pending_deadline - this.clock.now()) / 1000)));
    return row.pending_id;
  }

  /** Keeps a forced ruleset: no revert. 409 when none waits for confirmation. */
  async confirm(): Promise<FirewallView> {
    const row = await this.repo.get();
    if (!row?.pending_id) throw new AppError('conflict', 'no forced firewall change waits for confirmation');
    await this.repo.put({ ...row, pending_id: null, pending_deadline: null, previous_enabled: null, previous_rules_json: null });
    return this.get();
  }

  /** Puts back the state from before forced change `id` if it is still unconfirmed; true when it did. */
  async revertUnconfirmed(id: string): Promise<boolean> {
    const row = await this.repo.get();
    if (!row || row.pending_id !== id) return false;
    const previous: FirewallState = {
      'firewall-enabled': row.previous_enabled === 'yes' ? 'yes' : 'no',
      'firewall-rules-json': JSON.parse(row.previous_rules_json ?? '[]') as FirewallRule[],
    };
    await this.apply(previous);
    await this.repo.put({
      enabled: previous['firewall-enabled'], rules_json: JSON.stringify(previous['firewall-rules-json']), updated_at: this.clock.now(),
      pending_id: null, pending_deadline: null, previous_enabled: null, previous_rules_json: null,
    });
    return true;
  }

  /** The state as data: the helper checks it again and renders mailsvc's table (MAILSVC_NFT_TABLE) itself. */
  private async apply(state: FirewallState): Promise<void> {
    await this.nft.apply(state);
  }
}
