import { defineModule } from '../module-types.js';
import { firewallCommands } from './commands.js';
import type { FirewallModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    firewall: FirewallModule;
  }
}

export default defineModule({
  name: 'firewall',
  doc: 'docs/firewall.md',
  http: true,
  build: async (ctx) => (await import('./index.js')).createFirewallModule(ctx.infra),
  commands: (program, cli) => firewallCommands(program, cli.run()),
  // A forced ruleset still awaiting confirmation when the service stopped.
  prepare: (firewall) => firewall.resumePendingRevert(),
});
