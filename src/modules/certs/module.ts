import { progressView } from '../../shared/terminal/progress.js';
import { defineModule } from '../module-types.js';
import { certCommands } from './commands.js';
import type { CertificateDeployer } from './deployer.js';
import type { CertsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    certs: CertsModule;
  }
  interface ModuleOptions {
    /** Replaces the deployer MAILSVC_CERTS_DEPLOY chooses (a test's). */
    certsDeployer?: CertificateDeployer;
  }
}

/** ACME certificates (docs/certs.md); src/app/module-list.ts has one line for it. */
export default defineModule({
  name: 'certs',
  doc: 'docs/certs.md',
  migrations: {
    '0023_certificates': () => import('./migrations/0023_certificates.js'),
    '0027_certificates_pending': () => import('./migrations/0027_certificates_pending.js'),
  },
  http: true,
  build: async (ctx) => {
    const [{ createCertsModule }, domains, dns, jobs] = await Promise.all([import('./index.js'), ctx.get('domains'), ctx.get('dns'), ctx.get('jobs')]);
    return createCertsModule(ctx.infra, {
      activeDomains: () => domains.service.activeNames(),
      cloudflare: dns.cloudflare,
      dane: dns.dane,
      runner: jobs.runner,
      // MAILSVC_CERTS_DEPLOY=helper (the default): the tls module's deployer (the root helper installs,
      // mailsvc proves on the wire, restarts once, rolls back); `files`: the built-in file deployer.
      deployer: ctx.options.certsDeployer,
      helperDeployer: !ctx.options.certsDeployer && ctx.infra.settings.certs.deploy === 'helper' ? (await ctx.get('tls')).deployer : undefined,
    });
  },
  commands: (program, cli) => certCommands(program, cli.run(), () => progressView()),
});
