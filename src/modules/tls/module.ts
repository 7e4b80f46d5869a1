import { defineModule } from '../module-types.js';
import { tlsCommands } from './commands.js';
import type { TlsModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    tls: TlsModule;
  }
}

/** Certificates in service: deploy through the helper, proof on the wire, the served-expiry monitor (docs/tls.md). */
export default defineModule({
  name: 'tls',
  doc: 'docs/tls.md',
  migrations: { '0021_tls': () => import('./migrations/0021_tls.js') },
  build: async (ctx) => (await import('./index.js')).createTlsModule(ctx.infra),
  commands: (program, cli) => tlsCommands(program, cli.run()),
});
