import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

const Rule = Type.Object(
  {
    ports: Type.String({ description: 'space-separated ports, ranges (8000-8100) and groups: mail = 25 465 587 110 995 143 993 4190, web = 80 443, ssh = 22' }),
    protocol: Type.Union([Type.Literal('tcp'), Type.Literal('udp')]),
    source: Type.String({ description: 'IP address or CIDR network; empty for any' }),
    enabled: Type.Union([Type.Literal('yes'), Type.Literal('no')]),
  },
  { title: 'FirewallRule' },
);

export const FirewallSchema = Type.Object(
  {
    'firewall-enabled': Type.Union([Type.Literal('yes'), Type.Literal('no')]),
    'firewall-rules-json': Type.Array(Rule),
    confirm_by: Type.Optional(Type.String({ format: 'date-time', description: 'present while a forced change waits for POST /admin/firewall/confirm; it reverts then' })),
  },
  { title: 'Firewall' },
);
export type FirewallSchemaView = Static<typeof FirewallSchema>;

// The rules are checked by the service, which names the failing field (firewall-rules-json[i].ports …).
export const FirewallBody = Type.Object(
  { 'firewall-enabled': Type.Optional(Type.String({ maxLength: 3 })), 'firewall-rules-json': Type.Optional(Type.Array(Type.Unknown(), { maxItems: 256 })) },
  { additionalProperties: false },
);
export const ForceQuery = Type.Object({ force: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) });
