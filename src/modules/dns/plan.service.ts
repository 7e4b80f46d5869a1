import type { MailServices } from '../../adapters/mail-services.js';
import type { DomainLookup } from '../domains/index.js';
import type { DkimService } from './dkim.service.js';
import type { DaneService } from './dane.service.js';
import { buildPlan } from './dns-plan.js';
import type { DnsPlan } from './schema.js';

/** The DNS plan of a stored domain, with its published DKIM keys. */
export class DnsPlanService {
  constructor(
    private readonly dkim: Pick<DkimService, 'liveRows'>,
    private readonly domains: Pick<DomainLookup, 'resolve'>,
    private readonly srsDomain: string | undefined,
    /** What Postfix and Dovecot serve to mail clients (the SRV records); throws an AppError when unreadable. */
    private readonly services: () => Promise<MailServices>,
    private readonly dane?: Pick<DaneService, 'planRecords'>,
  ) {}

  /** The stored domain (404 when unknown). */
  domain(idOrName: string): Promise<{ name: string }> {
    return this.domains.resolve(idOrName);
  }

  async plan(domainName: string, mailHost: string, publicIp?: string): Promise<DnsPlan> {
    const { name } = await this.domains.resolve(domainName);
    const tlsa = this.dane ? await this.dane.planRecords(mailHost) : [];
    return buildPlan({ domain: name, mailHost, publicIp, srsDomain: this.srsDomain, dkim: await this.dkim.liveRows(name), services: await this.services(), tlsa });
  }
}
