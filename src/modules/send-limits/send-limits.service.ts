import { effectiveLimits } from '../../shared/send-rate.js';
import type { Limits } from '../../shared/send-rate.js';
import type { AccountLookup, AccountRow, SendLimitsListener } from '../accounts/index.js';
import type { LimitMap } from './limit-map.js';

/** Per-account send limits: 0 on the account inherits the global default (MAILSVC_SEND_RATE_*). */
export class SendLimitsService implements SendLimitsListener {
  constructor(
    private readonly accounts: Pick<AccountLookup, 'listAll'>,
    private readonly map: LimitMap,
    // Read per call: the global defaults can change at run time (the limits `send-rate-*`).
    private readonly defaultsOf: () => Limits,
  ) {}

  get defaults(): Limits {
    return this.defaultsOf();
  }

  effective(row: AccountRow): Limits {
    return effectiveLimits(row, this.defaults);
  }

  /** The limits the policy service applies to a SASL user: its map entry, else the defaults. */
  async forUser(address: string): Promise<Limits> {
    return (await this.map.get(address)) ?? this.defaults;
  }

  async accountChanged(row: AccountRow): Promise<void> {
    await this.map.set(row.address, this.effective(row));
  }

  async accountRemoved(address: string): Promise<void> {
    await this.map.remove(address);
  }

  /** Pushes every account's effective limits to the map, replacing it whole. */
  async syncAll(): Promise<{ accounts: number; defaults: Limits }> {
    const rows = await this.accounts.listAll();
    await this.map.replaceAll(new Map(rows.map((r) => [r.address, this.effective(r)])));
    return { accounts: rows.length, defaults: this.defaults };
  }
}
