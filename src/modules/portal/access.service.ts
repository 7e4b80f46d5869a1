import type { Clock } from '../../shared/clock.js';
import { normalizeAddress, normalizeDomain } from '../../shared/mail-names.js';
import type { AccountLookup } from '../accounts/index.js';
import type { DomainLookup } from '../domains/index.js';
import type { PortalRepository } from './portal.repository.js';
import type { PortalAccessView } from './schema.js';

/**
 * The administrator's switch: self-service off for a whole domain or one
 * mailbox. Switching it off ends the mailbox's (or domain's) portal sessions
 * at their next request; the portal answers 403 to a sign-in.
 */
export class PortalAccessService {
  constructor(
    private readonly repo: PortalRepository,
    private readonly domains: DomainLookup,
    private readonly accounts: Pick<AccountLookup, 'resolve'>,
    private readonly clock: Clock,
  ) {}

  async list(): Promise<PortalAccessView> {
    const rows = await this.repo.listDisabled();
    return { disabled_domains: rows.filter((r) => r.kind === 'domain').map((r) => r.name), disabled_mailboxes: rows.filter((r) => r.kind === 'mailbox').map((r) => r.name) };
  }

  /** Answers whether self-service is now on for the domain, and whether this call changed it. */
  async setDomain(name: string, enabled: boolean): Promise<{ name: string; self_service: boolean; changed: boolean }> {
    const domain = (await this.domains.resolve(normalizeDomain(name))).name;
    const changed = await this.repo.setDisabled('domain', domain, !enabled, this.clock.now());
    return { name: domain, self_service: enabled, changed };
  }

  async setMailbox(address: string, enabled: boolean): Promise<{ name: string; self_service: boolean; changed: boolean }> {
    const acc = await this.accounts.resolve(normalizeAddress(address).address);
    const changed = await this.repo.setDisabled('mailbox', acc.address, !enabled, this.clock.now());
    return { name: acc.address, self_service: enabled, changed };
  }
}
