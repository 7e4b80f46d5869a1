import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { CliError, output } from '../../shared/terminal/output.js';
import { commandGroup, notAudited, readOnly } from '../command-types.js';
import type { Run } from '../command-types.js';
import type { TlsModule } from './index.js';
import type { CheckReport, PortReport, TlsHealth } from './tls.service.js';
import type { DeployReport, DeployService } from './deployer.js';

const SERVICES = ['smtp', 'submission', 'smtps', 'imaps', 'pop3s', 'https'];

const portLine = (p: PortReport): string => {
  const what = p.served_sha256 ? `${p.subject ?? '?'}, until ${p.not_after?.slice(0, 10) ?? '?'} (${p.days_left ?? '?'} days), sha256 ${p.served_sha256.slice(0, 16)}…` : 'nothing read';
  return `${p.problem ? 'FAIL' : 'ok  '}  ${`${p.service}:${p.port}`.padEnd(16)}  ${p.problem ? `${p.problem} — ` : ''}${what}`;
};

export const checkText = (r: CheckReport): string =>
  [`${r.ok ? 'Every port serves a certificate valid for more than' : 'ALARM: a port is not served, or its certificate expires within'} ${r.alarm_days} days (${r.ports.length} ports read in ${r.milliseconds} ms)`, ...r.ports.map(portLine)].join('\n');

const deployText = (r: DeployReport): string =>
  [`${r.ok ? 'Deployed and proven' : 'FAILED'}: ${r.detail}`, ...r.ports.map((p) => `${p.matches ? 'ok  ' : p.detail?.startsWith('skipped') ? 'skip' : 'FAIL'}  ${`${p.service}:${p.port}`.padEnd(16)}  ${p.detail ?? ''}`)].join('\n');

const readPem = (path: string, what: string): string => {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read the ${what} file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, 66);
  }
};

function parseServices(raw: string): DeployService[] {
  const list = raw.split(',').map((s) => s.trim()).filter(Boolean);
  const bad = list.filter((s) => !SERVICES.includes(s));
  if (list.length === 0 || bad.length > 0) throw new CliError(`--services must be a comma-separated list of ${SERVICES.join(', ')}${bad.length ? ` (not: ${bad.join(', ')})` : ''}`, 64);
  return list as DeployService[];
}

/** `mailsvc tls check|status|deploy|rollback` (docs/tls.md). */
export function tlsCommands(program: Command, run: Run<TlsModule>): void {
  const tls = commandGroup(program, 'tls', 'certificates in service: what each port serves, deploy and prove on the wire, roll back');
  tls
    .command('check')
    .description('read the certificate every configured port serves (MAILSVC_DOCTOR_TLS_PORTS), all at once; exit 1 when a port is not served or its certificate expires within 14 days (the daily timer runs this)')
    .option('--json', 'print the report as JSON')
    .action(async (opts: { json?: boolean }) => {
      const r = await run((m) => m.service.check());
      output(opts.json, r, () => checkText(r));
      if (!r.ok) throw new CliError(`certificate alarm on ${r.ports.filter((p) => p.problem).map((p) => `${p.service}:${p.port}`).join(', ')}: renew or deploy a certificate (mailsvc tls deploy), then run mailsvc tls check again`, 1);
    });
  tls
    .command('status')
    .description('what each port served at its last reading, and the last deploy, without reading the ports again')
    .option('--json', 'print as JSON')
    .action(async (opts: { json?: boolean }) => {
      const r = await run(async (m): Promise<{ ports: PortReport[]; health: TlsHealth }> => ({ ports: await m.service.lastKnown(), health: await m.service.health() }));
      const d = r.health.last_deploy;
      output(opts.json, r, () => [d ? `last deploy: ${d.certificate} at ${d.at}: ${d.ok ? 'proven' : 'FAILED'} (${d.detail})` : 'no deploy yet', ...(r.ports.length ? r.ports.map(portLine) : ['no port read yet: run mailsvc tls check'])].join('\n'));
    });
  tls
    .command('deploy')
    .description('install a certificate through the helper, point Postfix, Dovecot and nginx at it, then prove every port serves it (a stale daemon is restarted once); exit 1 and the previous certificate back in place when a port does not serve it')
    .requiredOption('--name <name>', 'the certificate\'s name (its directory under MAILSVC_TLS_DIR), e.g. the mail host name')
    .requiredOption('--chain <file>', 'the PEM chain: the leaf first, then its issuers')
    .requiredOption('--key <file>', "the leaf's private key (PEM, unencrypted)")
    .option('--services <list>', `which services serve it: ${SERVICES.join(',')}`, SERVICES.join(','))
    .option('--json', 'print the outcome as JSON')
    .action(async (opts: { name: string; chain: string; key: string; services: string; json?: boolean }) => {
      const services = parseServices(opts.services);
      const [chainPem, keyPem] = [readPem(opts.chain, 'chain'), readPem(opts.key, 'key')];
      if (!opts.json) process.stderr.write(`deploying ${opts.name} to ${services.join(', ')} and reading every port…\n`);
      const r = await run((m) => m.deployer.deploy({ certName: opts.name, chainPem, keyPem, services }));
      output(opts.json, r, () => deployText(r));
      if (!r.ok) throw new CliError(`${r.detail}; see mailsvc tls status, fix the daemon, then deploy again`, 1);
    });
  tls
    .command('rollback')
    .description('point the daemons the last deploy of a certificate changed back at what they served before')
    .requiredOption('--name <name>', "the certificate's name")
    .option('--json', 'print the outcome as JSON')
    .action(async (opts: { name: string; json?: boolean }) => {
      const r = await run((m) => m.deployer.rollback(opts.name));
      output(opts.json, r, () => [`rolled back ${r.certificate}${r.sha256 ? ` to ${r.sha256.slice(0, 16)}…` : ' to the configuration before its first deploy'}`, ...r.daemons.map((d) => `  ${d.daemon}: ${d.status} (${d.detail})`)].join('\n'));
    });
  readOnly(program, ['tls status']);
  notAudited(program, ['tls check'], 'a daily check: reads what each port serves and keeps it; changes nothing on the host');
}
