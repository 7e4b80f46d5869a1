/**
 * The firewall's rules live in src/shared/firewall-rules.ts: the module and
 * the privileged helper (which renders the nftables file itself) check them
 * with the same code.
 */
export { PORT_GROUPS, allows, compileRuleset, parseFirewallState, parsePorts, parseRules } from '../../shared/firewall-rules.js';
export type { FirewallRule, FirewallState } from '../../shared/firewall-rules.js';
