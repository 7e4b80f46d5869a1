import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Redis } from 'ioredis';
import type { XMLParser, XMLValidator } from 'fast-xml-parser';
import { readMailServices, MailServicesError } from '../../adapters/mail-services.js';
import type { MailServiceFiles, MailServices } from '../../adapters/mail-services.js';
import type { AutoconfigSettings } from '../../config/autoconfig-settings.js';
import { AppError, badRequest } from '../../shared/errors.js';
import { normalizeAddress, normalizeDomain } from '../../shared/mail-names.js';
import type { DomainLookup } from '../domains/index.js';
import { OUTLOOK_RESPONSE_NS } from './namespaces.js';
import type { ClientSettings, MobileconfigInput } from './render.js';

/**
 * The XML side (fast-xml-parser and the renderers, about 190 kB of code),
 * loaded by the first autoconfiguration answer, not at the service's start.
 */

/** How deep the POX request's elements may nest (the request itself is 4 deep). */
const MAX_XML_DEPTH = 32;

/** The deepest nesting of elements in `xml` (start tags minus end tags; self-closing, comments, PIs and CDATA do not count). */
export function nestingDepth(xml: string): number {
  let depth = 0;
  let max = 0;
  for (const m of xml.matchAll(/<(\/?)([^\s>/!?][^>]*?)?(\/?)>|<!\[CDATA\[[\s\S]*?\]\]>|<!--[\s\S]*?-->|<\?[\s\S]*?\?>/g)) {
    if (m[2] === undefined) continue;
    if (m[1] === '/') depth--;
    else if (m[3] !== '/') max = Math.max(max, ++depth);
  }
  return max;
}

type Xml = { render: typeof import('./render.js'); parser: XMLParser; validator: typeof XMLValidator };
let xml: Promise<Xml> | undefined;
const loadXml = (): Promise<Xml> =>
  (xml ??= Promise.all([import('fast-xml-parser'), import('./render.js')]).then(([fxp, render]) => ({
    render,
    parser: new fxp.XMLParser({ removeNSPrefix: true, ignoreAttributes: true, processEntities: false, parseTagValue: false, trimValues: true }),
    validator: fxp.XMLValidator,
  })));

/** The one answer for a domain that is unknown or inactive: it names nothing the caller did not send. */
const NO_DOMAIN = 'No mail service for this domain here';

export const OUTLOOK_REQUEST_NS = 'http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006';

/**
 * The autoconfiguration answers. Each checks the caller's rate (per client
 * address), then that the domain is one of ours and active, and then renders
 * from the mail host and the services the daemons' configuration files offer.
 * No answer reads the accounts: an existing and a made-up mailbox of a known
 * domain get the same answer (with the address they sent as login name).
 */
export class AutoconfigService {
  private readonly limiter: RateLimiterAbstract;
  private cached: Promise<MailServices> | undefined;

  constructor(
    private readonly settings: AutoconfigSettings,
    private readonly domains: Pick<DomainLookup, 'resolve'>,
    redis: Redis | undefined,
  ) {
    const opts = { keyPrefix: 'mailsvc:autoconfig-ip', points: settings.perMinute, duration: 60 };
    this.limiter = redis ? new RateLimiterRedis({ ...opts, storeClient: redis, useRedisPackage: false }) : new RateLimiterMemory(opts);
  }

  /** The files the ports are read from. */
  files(): MailServiceFiles {
    return { postfixMasterCf: this.settings.postfixMasterCf, dovecotListeners: this.settings.dovecotListeners };
  }

  /** Read the daemons' configuration again on the next answer (after an edit, `mailsvc` reload). */
  forget(): void {
    this.cached = undefined;
  }

  /** The mail host and the offered services; 503 naming what to fix when either is missing. */
  async clientSettings(): Promise<ClientSettings> {
    const mailHost = this.settings.mailHost;
    if (mailHost === undefined) throw new AppError('unavailable', 'Autoconfiguration is not set up: set MAILSVC_MAIL_HOST to the name mail clients connect to');
    this.cached ??= readMailServices(this.files()).catch((err: unknown) => {
      this.cached = undefined;
      throw err;
    });
    try {
      return { mailHost, services: await this.cached };
    } catch (err) {
      if (err instanceof MailServicesError) throw new AppError('unavailable', `Autoconfiguration cannot read the mail daemons' configuration: ${err.message}`);
      throw err;
    }
  }

  /** One answer's worth of the client address's budget; 429 when used up. */
  async consume(ip: string): Promise<void> {
    try {
      await this.limiter.consume(ip, 1);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      const seconds = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      throw new AppError('rate_limited', `Too many autoconfiguration requests from this address: at most ${this.settings.perMinute} a minute; try again in ${seconds} s`, { retryAfter: seconds });
    }
  }

  /** The domain, normalized, when it is ours and active; else the same 404 for every case. */
  private async activeDomain(name: string): Promise<string> {
    const domain = normalizeDomain(name);
    const row = await this.domains.resolve(domain).catch((err: unknown) => {
      if (err instanceof AppError && err.code === 'not_found') return undefined;
      throw err;
    });
    if (row?.active !== 1) throw new AppError('not_found', NO_DOMAIN);
    return domain;
  }

  /** An address the caller sent (400 when it is not one), its domain ours and active (else 404). */
  async address(input: string): Promise<{ address: string; domain: string }> {
    const { address, domain } = normalizeAddress(input);
    await this.activeDomain(domain);
    return { address, domain };
  }

  /**
   * Thunderbird's config-v1.1.xml. The domain is the address's when
   * `emailaddress` is given, else the host asked for (`autoconfig.<domain>`
   * or the domain itself, for /.well-known/).
   */
  async thunderbird(emailaddress: string | undefined, host: string | undefined): Promise<string> {
    let domain: string;
    if (emailaddress !== undefined) domain = (await this.address(emailaddress)).domain;
    else {
      const name = (host ?? '').replace(/:\d+$/, '').toLowerCase();
      if (name === '') throw badRequest('Say which address to configure: ?emailaddress=you@example.org');
      domain = await this.activeDomain(name.startsWith('autoconfig.') ? name.slice('autoconfig.'.length) : name);
    }
    const settings = await this.clientSettings();
    return (await loadXml()).render.thunderbirdConfig(domain, settings);
  }

  /** The POX request's address ([MS-OXDSCLI] 2.2.3); 400 for anything else. */
  async parseAutodiscoverRequest(body: string): Promise<string> {
    // No document type: nothing to expand, no entity tricks.
    if (/<!DOCTYPE|<!ENTITY/i.test(body)) throw badRequest('Autodiscover request: a document type declaration is not accepted');
    // An Autodiscover request is four elements deep: a deeply nested body is refused before a parser recurses into it.
    if (nestingDepth(body) > MAX_XML_DEPTH) throw badRequest(`Autodiscover request: elements nested more than ${MAX_XML_DEPTH} deep are not accepted`);
    const { parser, validator } = await loadXml();
    if (validator.validate(body) !== true) throw badRequest('Autodiscover request: the body is not well-formed XML');
    const doc = parser.parse(body) as { Autodiscover?: { Request?: { EMailAddress?: unknown; AcceptableResponseSchema?: unknown } } };
    const req = doc.Autodiscover?.Request;
    if (typeof req?.EMailAddress !== 'string' || req.EMailAddress === '') throw badRequest('Autodiscover request: Autodiscover/Request/EMailAddress is missing');
    const schema = req.AcceptableResponseSchema;
    if (schema !== undefined && schema !== OUTLOOK_RESPONSE_NS) {
      throw badRequest(`Autodiscover request: only the response schema ${OUTLOOK_RESPONSE_NS} is offered (IMAP/POP3/SMTP settings; no Exchange ActiveSync)`);
    }
    return req.EMailAddress;
  }

  async autodiscover(body: string): Promise<string> {
    const { address } = await this.address(await this.parseAutodiscoverRequest(body));
    const settings = await this.clientSettings();
    return (await loadXml()).render.autodiscoverXml(address, settings);
  }

  async autodiscoverJson(email: string, protocol: string): Promise<{ Protocol: 'AutodiscoverV1'; Url: string }> {
    if (protocol.toLowerCase() !== 'autodiscoverv1') throw badRequest('Protocol must be AutodiscoverV1: only the POX Autodiscover endpoint is offered');
    const { domain } = await this.address(email);
    // The POX endpoint must be reachable on autodiscover.<domain>: say so before the client is sent there.
    await this.clientSettings();
    return (await loadXml()).render.autodiscoverJson(domain);
  }

  /** The Apple profile of an address of an active domain, without a password. */
  async publicMobileconfig(emailaddress: string): Promise<string> {
    const { address } = await this.address(emailaddress);
    const settings = await this.clientSettings();
    return (await loadXml()).render.mobileconfig({ address }, settings);
  }

  /** The profile, with a password when given: for the administrator's route and the self-service portal. */
  async renderMobileconfig(input: MobileconfigInput): Promise<string> {
    const { address } = await this.address(input.address);
    const settings = await this.clientSettings();
    return (await loadXml()).render.mobileconfig({ address, appPassword: input.appPassword }, settings);
  }
}
