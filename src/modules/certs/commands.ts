import type { Command } from 'commander';
import { AppError } from '../../shared/errors.js';
import type { ErrorCode } from '../../shared/errors.js';
import { CliError, escapeControl, output } from '../../shared/terminal/output.js';
import type { ProgressView } from '../../shared/terminal/progress.js';
import { readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { Job, JobUpdate } from '../jobs/index.js';
import type { CertService } from './cert.service.js';
import type { CertView, IssueJobInput, RenewJobInput, RenewOutcome } from './schema.js';

/** What the commands use of the module (index.ts): the service, and issue/renew as jobs run here. */
type CertsCli = {
  service: CertService;
  jobs: {
    runIssueHere(input: IssueJobInput, onUpdate: (u: JobUpdate) => void, signal?: AbortSignal): Promise<Job>;
    runRenewHere(input: RenewJobInput, onUpdate: (u: JobUpdate) => void, signal?: AbortSignal): Promise<Job>;
  };
};

const line = (c: CertView): string =>
  `${c.name.padEnd(10)} ${c.state.padEnd(8)} ${c.not_after ? `until ${c.not_after.slice(0, 10)} (${c.days_left} days), renews ${c.renew_at?.slice(0, 10) ?? '-'}` : 'not issued'}  ${c.names.join(' ')}${c.last_error ? `\n           last attempt failed: ${escapeControl(c.last_error, true)}` : ''}`;

const detail = (c: CertView): string =>
  [
    line(c),
    `  serial ${c.serial ?? '-'}  sha256 ${c.sha256 ?? '-'}`,
    ...(c.ari_window ? [`  the CA suggests renewing between ${c.ari_window.start} and ${c.ari_window.end} (ARI)`] : []),
    ...(c.next_attempt_at ? [`  next attempt not before ${c.next_attempt_at} (${c.failures} failed in a row)`] : []),
    ...(c.pending ? [`  held back: a certificate with a new key (sha256 ${c.pending.sha256}, issued ${c.pending.issued_at ?? '-'}) waits for its DANE record; the renewal check deploys it (mailsvc dns dane status)`] : []),
    ...(c.proof ? [`  proven on the wire: ${c.proof.ok ? 'yes' : 'NO'}`, ...c.proof.ports.map((p) => `    ${p.service}:${p.port} ${p.matches ? 'serves it' : `does not: ${escapeControl(p.detail ?? 'another certificate', true)}`}`)] : []),
  ].join('\n');

/**
 * Runs an issue or renew job in the foreground (as the API's job runs it),
 * its progress on stderr (stdout keeps the result, so --json stays one
 * document); Ctrl-C interrupts it. A failed job is its error again: the line,
 * and the exit code of its code (CA unreachable 69, a certificate busy 3, else 1).
 */
async function foreground(run: Run<CertsCli>, view: () => ProgressView, start: (m: CertsCli, update: (u: JobUpdate) => void, signal: AbortSignal) => Promise<Job>): Promise<unknown> {
  const display = view();
  const abort = new AbortController();
  const interrupt = (): void => abort.abort(new Error('interrupted (Ctrl-C)'));
  process.once('SIGINT', interrupt);
  let job: Job;
  try {
    job = await run((m) => start(m, (u) => display.update(u), abort.signal));
    display.end(job);
  } finally {
    process.off('SIGINT', interrupt);
  }
  if (job.state === 'failed') {
    const code = (job.result as { error?: { code?: ErrorCode } } | null)?.error?.code;
    throw new AppError(code ?? 'internal', job.message);
  }
  return job.result;
}

/** `mailsvc certs list|show|issue|renew|revoke` (docs/certs.md). */
export function certCommands(program: Command, run: Run<CertsCli>, view: () => ProgressView): void {
  const certs = program.command('certs').description('ACME certificates for the mail host, the panel and mta-sts./autoconfig. names, proven on the wire');
  certs
    .command('list')
    .description('every certificate: state, validity, when it renews, the last failure')
    .option('--json', 'print them as JSON')
    .action(async (opts: { json?: boolean }) => {
      const list = await run((m) => m.service.list());
      output(opts.json, list, () => (list.length === 0 ? 'No certificates yet: set MAILSVC_MAIL_HOSTNAME, then run mailsvc certs issue.' : list.map(line).join('\n')));
    });
  certs
    .command('show')
    .description('one certificate with its last on-the-wire proof (--json adds the chain; the key is never shown)')
    .argument('[name]', 'the certificate name', 'mail')
    .option('--json', 'print it as JSON')
    .action(async (name: string, opts: { json?: boolean }) => {
      const c = await run((m) => m.service.show(name));
      output(opts.json, c, () => detail(c));
    });
  certs
    .command('issue')
    .description('order a certificate now, answer the challenges, deploy it and prove every TLS port serves it')
    .argument('[name]', 'the certificate name', 'mail')
    .option('--names <names>', "comma-separated DNS names, each one of this server's (default: the configured ones)")
    .option('--new-key', 'a new private key instead of the one in service')
    .option('--json', 'print the certificate as JSON')
    .action(async (name: string, opts: { names?: string; newKey?: boolean; json?: boolean }) => {
      const names = opts.names?.split(',').map((s) => s.trim()).filter(Boolean);
      const c = (await foreground(run, view, (m, update, signal) => m.jobs.runIssueHere({ name, ...(names ? { names } : {}), ...(opts.newKey ? { new_key: true } : {}) }, update, signal))) as CertView;
      output(opts.json, c, () => `${c.pending ? 'Issued, held back for DANE' : 'Issued and proven'}: ${detail(c)}`);
    });
  certs
    .command('renew')
    .description("renew what is due (the CA's ARI window, else two thirds of the lifetime; failed ones after their backoff): the timer's check")
    .argument('[name]', 'only this certificate')
    .option('--force', 'renew even when not due')
    .option('--json', 'print the outcomes as JSON')
    .action(async (name: string | undefined, opts: { force?: boolean; json?: boolean }) => {
      const out = (await foreground(run, view, (m, update, signal) => m.jobs.runRenewHere({ ...(name ? { name } : {}), ...(opts.force ? { force: true } : {}) }, update, signal))) as RenewOutcome[];
      output(opts.json, out, () => (out.length === 0 ? 'No certificates: set MAILSVC_MAIL_HOSTNAME first.' : out.map((o) => `${o.name}: ${o.action} (${escapeControl(o.detail, true)})`).join('\n')));
      // A failed renewal is a check that found a problem: exit 1 (the timer's unit shows failed).
      if (out.some((o) => o.action === 'failed')) process.exitCode = 1;
    });
  certs
    .command('revoke')
    .description('revoke the certificate in service at the CA (the next renewal gets a new one with a new key)')
    .argument('[name]', 'the certificate name', 'mail')
    .option('--reason <code>', 'RFC 5280 reason code: 0 unspecified, 1 keyCompromise, 4 superseded, 5 cessationOfOperation', '0')
    .option('--json', 'print the certificate as JSON')
    .action(async (name: string, opts: { reason: string; json?: boolean }) => {
      if (!/^[0-5]$/.test(opts.reason)) throw new CliError('--reason: a reason code from 0 to 5 (0 unspecified, 1 keyCompromise, 4 superseded, 5 cessationOfOperation)', 2);
      const c = await run((m) => m.service.revoke(name, Number(opts.reason)));
      output(opts.json, c, () => `Revoked ${c.name} (${c.serial ?? ''}). mailsvc certs renew ${c.name} issues a new one.`);
    });
  readOnly(program, ['certs list', 'certs show']);
}
