import type { Command } from 'commander';
import { output } from '../../shared/terminal/output.js';
import { table } from '../../shared/terminal/options.js';
import { commandGroup, readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { DkimService } from './dkim.service.js';
import type { DnsPlanService } from './plan.service.js';
import type { DkimResult, DeliverabilityReport } from './schema.js';
import type { DeliverabilityService } from './deliverability.service.js';
import type { CloudflareSyncService } from './cloudflare-sync.service.js';
import type { RotationService, RotationStatus } from './rotation.service.js';
import type { SrsService } from './srs.service.js';
import type { DaneRolloverState, DaneService } from './dane.service.js';
import { readFileSync } from 'node:fs';
import { CliError } from '../../shared/terminal/output.js';
import { yesNo } from '../../shared/terminal/options.js';
import type { JobRunner } from '../jobs/index.js';
import type { ProgressView } from '../../shared/terminal/progress.js';
import { escapeControl } from '../../shared/terminal/output.js';
import { deliverabilityExit } from './deliverability/exit-code.js';

type Deps = { srsEnabled: boolean; srs: SrsService; rotation: RotationService; dane: DaneService; dkim: DkimService; plan: DnsPlanService; deliverability: DeliverabilityService; cloudflare: CloudflareSyncService; jobs: JobRunner | undefined; apiUpstream: string };

/** What to publish after keys were made: shared with `add domain --generate-dkim`. */
export const describeDkim = (r: DkimResult): string =>
  [
    ...r.keys.map((k) => `DKIM ${k.algorithm} key, selector ${k.selector} (${k.state}). Publish:\n  ${k.record_name}. IN TXT "${k.record_value}"`),
    `Rspamd: ${r.signing.detail}.`,
    `The whole DNS plan: mailsvc dns plan ${r.domain} <mail host>`,
  ].join('\n');

const readStdin = async (): Promise<string> => {
  let text = '';
  for await (const chunk of process.stdin) text += String(chunk);
  return text;
};

const MARK = { pass: 'PASS', warn: 'WARN', fail: 'FAIL', unknown: ' ?  ' } as const;
const reportLines = (r: DeliverabilityReport): string =>
  [
    `Deliverability of ${r.domain} (mail host ${r.mail_host}${r.public_ip ? `, ${r.public_ip}` : ''})`,
    ...r.checks.flatMap((c) => [`  ${MARK[c.status]}  ${c.name}: ${c.detail}`, ...(c.fix && c.status !== 'pass' ? [`        fix: ${c.fix}`] : [])]),
    `${r.counts.pass} passed, ${r.counts.warn} recommended, ${r.counts.fail} failed, ${r.counts.unknown} could not be determined (${r.dns_queries} DNS queries, ${r.milliseconds} ms).`,
    ...(r.changes.length ? ['Changed since the previous report:', ...r.changes.map((c) => `  ${c.name}: ${c.from ?? 'new'} -> ${c.to}`)] : []),
    ...(r.files.length ? [`Saved: ${r.files.join(', ')}`] : []),
  ].join('\n');

/** `mailsvc dns generate-dkim|keys|plan|sync-signing`. */
export function dnsCommands(program: Command, run: Run<Deps>, view: () => ProgressView): void {
  const dns = commandGroup(program, 'dns', 'DKIM keys, the DNS plan, DNS provider sync and deliverability checks');

  dns
    .command('generate-dkim')
    .description('make the first DKIM keys of a domain (RSA, with --ed25519 also Ed25519) and sign its mail with them')
    .argument('<domain>', 'the domain (its name or id)')
    .option('--ed25519', 'also an Ed25519 key, signing alongside the RSA one')
    .option('--json', 'print the keys and the signing outcome as JSON')
    .action(async (domain: string, opts: { ed25519?: boolean; json?: boolean }) => {
      const r = await run((m) => m.dkim.generate(domain, opts.ed25519 === undefined ? {} : { ed25519: true }));
      output(opts.json, r, () => describeDkim(r));
    });

  dns
    .command('keys')
    .description('the DKIM keys of a domain that are published or signing, with the record each needs')
    .argument('<domain>', 'the domain (its name or id)')
    .option('--json', 'print them as a JSON array')
    .action(async (domain: string, opts: { json?: boolean }) => {
      const keys = await run((m) => m.dkim.keys(domain));
      output(opts.json, keys, () =>
        keys.length === 0
          ? `No DKIM keys. Make them with: mailsvc dns generate-dkim ${domain}`
          : table(['selector', 'algorithm', 'bits', 'state', 'created'], keys.map((k) => [k.selector, k.algorithm, String(k.bits), k.state, k.created_at.slice(0, 10)])),
      );
    });

  dns
    .command('plan')
    .description('every DNS record the domain needs, with its purpose, as zone-file lines (the "generate DNS plan" script)')
    .argument('<domain>', 'the domain (its name or id)')
    .argument('<mail-host>', 'the mail host name (MX target), e.g. mail.example.org')
    .option('--public-ip <ip>', 'the mail host\'s public address (fills in A/AAAA and PTR)')
    .option('--json', 'print the plan as JSON (records with purposes, the MTA-STS policy, the zone lines)')
    .action(async (domain: string, mailHost: string, opts: { publicIp?: string; json?: boolean }) => {
      const plan = await run((m) => m.plan.plan(domain, mailHost, opts.publicIp));
      output(opts.json, plan, () => plan.zone.trimEnd());
    });

  dns
    .command('export-bundle')
    .description('the "export live bundle" script: zone fragment, MTA-STS policy, nginx snippet and README in one .tar.gz')
    .argument('<domain>', 'the domain (its name or id)')
    .argument('<mail-host>', 'the mail host name (MX target)')
    .argument('<public-ip>', 'the mail host\'s public IPv4 or IPv6 address')
    .option('--output <file>', 'where to write the archive (default: ./mailsvc-dns-<domain>.tar.gz)')
    .option('--json', 'print where it was written and what it holds as JSON')
    .action(async (domain: string, mailHost: string, ip: string, opts: { output?: string; json?: boolean }) => {
      const r = await run(async (m) => {
        const plan = await m.plan.plan(domain, mailHost, ip);
        // Loaded when it runs: the command list stays light.
        const { writeBundle } = await import('./live-bundle.js');
        return writeBundle(plan, opts.output ?? `mailsvc-dns-${plan.domain}.tar.gz`, m.apiUpstream);
      });
      output(opts.json, r, () => [`Wrote ${r.path}:`, ...r.files.map((f) => `  ${f}`)].join('\n'));
    });

  dns
    .command('sync-signing')
    .description('render Rspamd\'s DKIM signing files again from the stored keys, check and reload')
    .option('--json', 'print the outcome as JSON')
    .action(async (opts: { json?: boolean }) => {
      const r = await run((m) => m.dkim.syncSigning());
      output(opts.json, r, () => `Rspamd: ${r.detail}.`);
    });

  /**
   * The check as a job in the foreground (progress on stderr), the report on
   * stdout. Exit 1 when a check fails (with --strict, also when one could not
   * be determined); exit 69 when no check could be determined at all, so cron
   * and monitoring never read "nothing was checked" as healthy.
   */
  const deliverability = (save: boolean) => async (domain: string, mailHost: string, opts: { publicIp?: string; json?: boolean; strict?: boolean }) => {
    const display = view();
    const abort = new AbortController();
    const interrupt = (): void => abort.abort(new Error('interrupted (Ctrl-C)'));
    process.once('SIGINT', interrupt);
    try {
      const job = await run(async (m) => {
        if (!m.jobs) throw new Error('jobs are not available');
        const { name } = await m.plan.domain(domain);
        return m.jobs.runHere('deliverability', { domain: name, mail_host: mailHost, public_ip: opts.publicIp, save }, (u) => display.update(u), abort.signal);
      });
      display.end(job);
      if (job.state === 'failed') {
        process.stdout.write(opts.json ? `${JSON.stringify(job, null, 2)}\n` : `${escapeControl(job.message)}\n`);
        process.exitCode = 1;
        return;
      }
      const report = job.result as DeliverabilityReport;
      output(opts.json, report, () => reportLines(report));
      process.exitCode = deliverabilityExit(report.counts, opts.strict === true);
    } finally {
      process.off('SIGINT', interrupt);
    }
  };

  for (const [name, save, what] of [
    ['check', false, 'the "deliverability check" script: every check of the domain in parallel, each pass, fail or ? (could not determine) with what to fix; exit 1 when one fails, 69 when none could be determined'],
    ['report', true, 'the "deliverability report" script: the check, saved as timestamped JSON and text under <data dir>/deliverability/<domain>/, with what changed since the previous report; exit 1 when one fails, 69 when none could be determined'],
  ] as const) {
    dns
      .command(name)
      .description(what)
      .argument('<domain>', 'the domain (its name or id)')
      .argument('<mail-host>', 'the mail host name (MX target)')
      .option('--public-ip <ip>', 'its public address: adds the PTR check and compares A/AAAA')
      .option('--json', 'print the report as JSON')
      .option('--strict', 'a check that could not be determined counts as failed (exit 1)')
      .action(deliverability(save));
  }

  dns
    .command('report-again')
    .description('what the deliverability timer runs: each domain\'s latest report again with the same mail host and IP (only when MAILSVC_ENABLE_DELIVERABILITY_TIMER=yes, unless --force)')
    .option('--force', 'run even when the timer switch is off')
    .option('--json', 'print the reports as a JSON array')
    .action(async (opts: { force?: boolean; json?: boolean }) => {
      const reports = await run(async (m) => (opts.force || m.deliverability.timerEnabled ? m.deliverability.reportAgain() : null));
      if (reports === null) {
        output(opts.json, [], () => 'The deliverability timer is off (MAILSVC_ENABLE_DELIVERABILITY_TIMER is not yes): nothing done.');
        return;
      }
      output(opts.json, reports, () => (reports.length ? reports.map(reportLines).join('\n') : 'No saved reports to repeat: run mailsvc dns report <domain> <mail host> once.'));
      process.exitCode = Math.max(0, ...reports.map((r) => deliverabilityExit(r.counts, false)));
    });

  dns
    .command('configure-cloudflare')
    .description('store the Cloudflare zone id and API token of a domain (the token is checked against the zone first, then sealed; never shown again)')
    .argument('<domain>', 'the domain (its name or id)')
    .requiredOption('--zone-id <id>', 'the zone id (Cloudflare dashboard, the zone\'s Overview page)')
    .requiredOption('--api-token <token>', 'a zone-limited API token with DNS edit permission; "-" reads it from standard input (keeps it out of the process list)')
    .option('--enable-sync [yes|no]', 'sync automatically after key changes and rotations', yesNo)
    .option('--json', 'print the stored settings as JSON (without the token)')
    .action(async (domain: string, opts: { zoneId: string; apiToken: string; enableSync?: boolean; json?: boolean }) => {
      const token = opts.apiToken === '-' ? (await readStdin()).trim() : opts.apiToken;
      const v = await run((m) => m.cloudflare.configure(domain, { zoneId: opts.zoneId, token, enabled: opts.enableSync ?? false }));
      output(opts.json, v, () => `Cloudflare sync of ${v.domain}: zone ${v.zone_id}, token stored, automatic sync ${v.enabled ? 'on' : 'off'}. Sync now with: mailsvc dns sync-dkim ${v.domain} --dry-run`);
    });

  dns
    .command('sync-dkim')
    .description('make the domain\'s Cloudflare zone hold exactly its DKIM records (only records tagged mailsvc:dkim are changed); reads them back after writing')
    .argument('<domain>', 'the domain (its name or id)')
    .option('--dry-run', 'show what would change, change nothing')
    .option('--json', 'print the result as JSON')
    .action(async (domain: string, opts: { dryRun?: boolean; json?: boolean }) => {
      const r = await run((m) => m.cloudflare.syncDkim(domain, { dryRun: opts.dryRun === true }));
      output(opts.json, r, () =>
        [
          ...r.changes.map((c) => `${c.action.padEnd(6)} ${c.name} TXT${c.action === 'update' ? `\n         - ${c.previous}\n         + ${c.content}` : c.action === 'create' ? `\n         + ${c.content}` : c.action === 'skip' ? ` (${c.reason})` : ''}`),
          r.dry_run ? 'Dry run: nothing changed.' : r.changed ? `${r.changed} record(s) changed; read back and verified.` : 'Nothing to change.',
        ].join('\n'),
      );
    });

  const describeRotation = (r: RotationStatus): string =>
    r.step === 'done'
      ? `DKIM rotation of ${r.domain} is done: selector ${r.new_selector} signs; ${r.old_selectors.join(', ')} removed.`
      : `DKIM rotation of ${r.domain} (new selector ${r.new_selector}) is at step ${r.step}${r.waiting ? `, waiting for ${r.waiting}` : ''}${r.wait_until ? ` (until ${r.wait_until})` : ''}. Run the same command again to continue.`;

  dns
    .command('rotate-dkim')
    .description('rotate the DKIM keys of a domain, or continue its rotation: new key, published, visible on every authoritative server, its TTL passed, then signing switches; the old record stays for dkim-rotation-grace-days')
    .argument('[domain]', 'the domain (its name or id)')
    .option('--due', 'every rotation in progress, and every domain whose key is older than dkim-rotation-days (what the timer runs)')
    .option('--json', 'print the rotation state as JSON')
    .action(async (domain: string | undefined, opts: { due?: boolean; json?: boolean }) => {
      if (!domain && !opts.due) throw new CliError('name a domain, or use --due', 2);
      const states = await run(async (m) => (opts.due ? m.rotation.advanceDue() : [await m.rotation.rotate(domain ?? '')]));
      output(opts.json, opts.due ? states : states[0], () => (states.length ? states.map(describeRotation).join('\n') : 'No rotation due.'));
    });

  dns
    .command('sync-srs')
    .description('the "sync SRS domains" script: postsrsd\'s excluded domains = the active domains (rewritten only when the list changed, postsrsd restarted, checked live)')
    .option('--if-enabled', 'do nothing unless MAILSVC_ENABLE_SRS=yes (what the timer runs)')
    .option('--json', 'print the result as JSON')
    .action(async (opts: { ifEnabled?: boolean; json?: boolean }) => {
      const r = await run(async (m) => (opts.ifEnabled && !m.srsEnabled ? null : m.srs.sync()));
      if (r === null) return output(opts.json, { skipped: true }, () => 'SRS sync is off (MAILSVC_ENABLE_SRS is not yes): nothing done.');
      output(opts.json, r, () =>
        [`postsrsd excludes: ${r.excluded.join(', ') || '(none)'}`, r.changed ? `Written; postsrsd ${r.restarted ? 'restarted' : 'not restarted'}.` : 'Already aligned: nothing written.', `Live check: local ${r.verified.local ?? '-'}; foreign rewritten to ${r.verified.foreign ?? '-'}`].join('\n'),
      );
    });

  const describeDane = (s: DaneRolloverState): string =>
    [
      `DANE of ${s.mail_host}: ${s.state}${s.deploy_allowed ? ' (the new certificate may be deployed now)' : ''}`,
      ...s.records.map((r) => `  _25._tcp.${s.mail_host}. IN TLSA ${r}`),
      ...(s.waiting ? [`  waiting for ${s.waiting}${s.wait_until ? ` (until ${s.wait_until})` : ''}`] : s.wait_until ? [`  until ${s.wait_until}`] : []),
      ...(s.last_error ? [`  last error: ${escapeControl(s.last_error)}`] : []),
    ].join('\n');

  const dane = dns.command('dane').description('DANE for the mail host: the TLSA 3 1 1 records of port 25 and the key change that publishes the next key before its certificate is deployed');

  dane
    .command('status')
    .description('the DANE key of a mail host (or of every one): the records published, the key change in progress and what it waits for')
    .argument('[mail-host]', 'the mail host name (default: every mail host mailsvc keeps a DANE key of)')
    .option('--json', 'print the state as JSON (an array without a mail host)')
    .action(async (mailHost: string | undefined, opts: { json?: boolean }) => {
      const states = await run(async (m) => (mailHost ? [await m.dane.status(mailHost)] : m.dane.list()));
      output(opts.json, mailHost ? states[0] : states, () => (states.length ? states.map(describeDane).join('\n') : 'No DANE key yet: mailsvc keeps one once it issues the mail host\'s certificate (or: mailsvc dns dane adopt <mail host>).'));
    });

  dane
    .command('advance')
    .description('take the key change of a mail host (or every one in progress: what the timer runs) as far as it can go now: next record published, visible on every authoritative server, its TTL passed, ready to deploy')
    .argument('[mail-host]', 'the mail host name (default: every key change in progress)')
    .option('--json', 'print the state as JSON (an array without a mail host)')
    .action(async (mailHost: string | undefined, opts: { json?: boolean }) => {
      if (mailHost) {
        const s = await run((m) => m.dane.advance(mailHost));
        return output(opts.json, s, () => describeDane(s));
      }
      const r = await run((m) => m.dane.advanceAll());
      output(opts.json, r.states, () => [...r.states.map(describeDane), ...r.errors.map((e) => `${e.mail_host}: ${escapeControl(e.error)}`)].join('\n') || 'No DANE key change in progress.');
      if (r.errors.length) process.exitCode = 1;
    });

  dane
    .command('adopt')
    .description('take the key port 25 serves now (STARTTLS on the mail host), or that of a certificate file, as the mail host\'s current DANE key: its TLSA record goes into the DNS plan')
    .argument('<mail-host>', 'the mail host name')
    .option('--cert <file>', 'a PEM certificate (or key) file instead of what port 25 serves')
    .option('--json', 'print the state as JSON')
    .action(async (mailHost: string, opts: { cert?: string; json?: boolean }) => {
      let pem: string | undefined;
      if (opts.cert !== undefined) {
        try {
          pem = readFileSync(opts.cert, 'utf8');
        } catch (err) {
          throw new CliError(`cannot read ${opts.cert}: ${(err as NodeJS.ErrnoException).code ?? String(err)}; give a readable PEM file`, 2);
        }
      }
      const s = await run((m) => m.dane.adopt(mailHost, pem));
      output(opts.json, s, () => `${describeDane(s)}\nPublish the record (mailsvc dns plan <domain> ${s.mail_host}), then check: mailsvc dns check <domain> ${s.mail_host}`);
    });

  readOnly(program, ['dns keys', 'dns plan', 'dns export-bundle', 'dns check', 'dns dane status']);
}
