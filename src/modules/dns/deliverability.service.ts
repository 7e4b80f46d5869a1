import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/database.js';
import type { DnsSettings } from '../../config/dns-settings.js';
import type { OutboundPolicy } from '../../adapters/outbound/address-policy.js';
import type { Clock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';
import { normalizeDomain } from '../../shared/mail-names.js';
import type { DomainLookup } from '../domains/index.js';
import type { DkimService } from './dkim.service.js';
import { parseIp } from './dns-plan.js';
import { runChecks } from './deliverability/run-checks.js';
import type { DeliverabilityReport } from './schema.js';
import { savedReport } from './saved-report.js';

export type DeliverabilityDeps = {
  db: Db;
  clock: Clock;
  dns: DnsSettings;
  policy: OutboundPolicy;
  domains: Pick<DomainLookup, 'resolve'>;
  dkim: Pick<DkimService, 'liveRows'>;
  /** Where saved reports are written: `<dir>/<domain>/<timestamp>.json|.txt`. */
  reportDir: string;
  /** Extra trusted CAs for the HTTPS and STARTTLS checks (a private CA in tests). */
  ca?: readonly string[] | undefined;
};

const ICON = { pass: 'PASS', warn: 'WARN', fail: 'FAIL', unknown: '????' } as const;

/** The readable form of a report (the CLI prints it; `report` saves it beside the JSON). */
export function reportText(r: DeliverabilityReport): string {
  const lines = [
    `Deliverability of ${r.domain} (mail host ${r.mail_host}${r.public_ip ? `, ${r.public_ip}` : ''}) at ${r.checked_at}`,
    ...r.checks.flatMap((c) => [`  ${ICON[c.status]}  ${c.name}: ${c.detail}`, ...(c.fix && c.status !== 'pass' ? [`        fix: ${c.fix}`] : [])]),
    `${r.counts.pass} passed, ${r.counts.warn} recommended, ${r.counts.fail} failed, ${r.counts.unknown} could not be determined; ${r.dns_queries} DNS queries in ${r.milliseconds} ms.`,
  ];
  if (r.changes.length) lines.push('Changed since the previous report:', ...r.changes.map((c) => `  ${c.name}: ${c.from ?? 'new'} → ${c.to}`));
  return `${lines.join('\n')}\n`;
}

/** The deliverability check (all checks at once) and the saved, timestamped report with what changed. */
export class DeliverabilityService {
  constructor(private readonly d: DeliverabilityDeps) {}

  /** MAILSVC_ENABLE_DELIVERABILITY_TIMER: the timer's `dns report-again` does nothing without it. */
  get timerEnabled(): boolean {
    return this.d.dns.enableDeliverabilityTimer;
  }

  async check(domainName: string, mailHost: string, publicIp?: string, onProgress?: (fraction: number, message: string) => void): Promise<DeliverabilityReport> {
    const { name } = await this.d.domains.resolve(domainName);
    const host = normalizeDomain(mailHost);
    const ip = publicIp === undefined || publicIp === '' ? undefined : parseIp(publicIp).toString();
    const run = await runChecks(
      { domain: name, mailHost: host, publicIp: ip, dkim: await this.d.dkim.liveRows(name) },
      {
        resolvers: this.d.dns.resolvers,
        authoritative: this.d.dns.authoritative,
        policy: this.d.policy,
        httpsPort: this.d.dns.deliverabilityHttpsPort,
        smtpPort: this.d.dns.deliverabilitySmtpPort,
        ca: this.d.ca,
        now: () => this.d.clock.now(),
        onProgress: (done, total, label) => onProgress?.(done / total, `${label} checked`),
      },
    );
    const counts = { pass: 0, warn: 0, fail: 0, unknown: 0 };
    for (const c of run.checks) counts[c.status] += 1;
    return {
      id: randomUUID(),
      domain: name,
      mail_host: host,
      public_ip: ip ?? null,
      checked_at: new Date(this.d.clock.now()).toISOString(),
      ok: counts.fail === 0,
      counts,
      checks: run.checks,
      dns_queries: run.dnsQueries,
      authoritative: run.authoritative,
      milliseconds: run.milliseconds,
      changes: [],
      files: [],
    };
  }

  /** Runs the check, compares with the previous saved report, saves JSON and text files and the record. */
  async report(domainName: string, mailHost: string, publicIp?: string, onProgress?: (fraction: number, message: string) => void): Promise<DeliverabilityReport> {
    const r = await this.check(domainName, mailHost, publicIp, onProgress);
    const previous = await this.latest(r.domain).catch(() => null);
    const before = new Map(previous?.checks.map((c) => [c.id, c.status]) ?? []);
    r.changes = r.checks.filter((c) => before.get(c.id) !== c.status).map((c) => ({ id: c.id, name: c.name, from: before.get(c.id) ?? null, to: c.status }));
    if (previous === null) r.changes = [];
    const dir = join(this.d.reportDir, r.domain);
    mkdirSync(dir, { recursive: true, mode: 0o750 });
    const stamp = r.checked_at.replace(/[:.]/g, '-');
    r.files = [join(dir, `${stamp}.json`), join(dir, `${stamp}.txt`)];
    writeFileSync(r.files[0] ?? '', `${JSON.stringify(r, null, 2)}\n`, { mode: 0o640 });
    writeFileSync(r.files[1] ?? '', reportText(r), { mode: 0o640 });
    await this.d.db.insertInto('deliverability_reports').values({ id: r.id, domain: r.domain, created_at: Date.parse(r.checked_at), failed: r.counts.fail, report_json: JSON.stringify(r) }).execute();
    return r;
  }

  /** The newest saved report of a domain; 404 when none was saved. */
  async latest(domainName: string): Promise<DeliverabilityReport> {
    const { name } = await this.d.domains.resolve(domainName);
    const row = await this.d.db.selectFrom('deliverability_reports').select('report_json').where('domain', '=', name).orderBy('created_at', 'desc').limit(1).executeTakeFirst();
    if (!row) throw new AppError('not_found', `No deliverability report of ${name} yet: run mailsvc dns report ${name} <mail host>`);
    return savedReport(row.report_json);
  }

  /** What the timer does: each domain's latest report again, with the same mail host and IP. */
  async reportAgain(): Promise<DeliverabilityReport[]> {
    const rows = await this.d.db.selectFrom('deliverability_reports').select(['domain']).distinct().execute();
    const out: DeliverabilityReport[] = [];
    for (const { domain } of rows) {
      const last = await this.latest(domain).catch(() => null);
      if (last) out.push(await this.report(domain, last.mail_host, last.public_ip ?? undefined));
    }
    return out;
  }
}
