import { defineModule } from '../module-types.js';
import { certCommands } from './commands.js';
import type { CertificateDeployer } from './deployer.js';
import type { CertsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    certs: CertsModule;
  }
  interface ModuleOptions {
    /** Replaces the deployer (a test's, or a `tls` module's before it is in the list). */
    certsDeployer?: CertificateDeployer;
  }
}

/** ACME certificates (docs/certs.md); src/app/module-list.ts has one line for it. */
export default defineModule({
  name: 'certs',
  doc: 'docs/certs.md',
  migrations: { '0023_certificates': () => import('./migrations/0023_certificates.js') },
  http: true,
  build: async (ctx) => {
    const [{ createCertsModule }, domains, dns] = await Promise.all([import('./index.js'), ctx.get('domains'), ctx.get('dns')]);
    return createCertsModule(ctx.infra, {
      activeDomains: () => domains.service.activeNames(),
      cloudflare: dns.cloudflare,
      // The deployer seam: when a `tls` module (deploy through the helper, prove on the wire) is in the
      // module list, its CertificateDeployer goes here; until then the built-in LocalFileDeployer.
      deployer: ctx.options.certsDeployer,
    });
  },
  commands: (program, cli) => certCommands(program, cli.run()),
});
