import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { SortQuery } from '../sort.schema.js';

export const BanSchema = Type.Object(
  {
    ip: Type.String({ description: 'address or network (CIDR), canonical form' }),
    jails: Type.Array(Type.String(), { description: 'every active fail2ban jail that holds it' }),
    reason: Type.Union([Type.String(), Type.Null()], { description: 'the reason given to a manual ban; null for a ban fail2ban made itself' }),
    banned_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'null when unknown or never' }),
  },
  { title: 'Ban' },
);
export type BanView = Static<typeof BanSchema>;

export const BanBody = Type.Object(
  {
    ip: Type.String({ minLength: 1, maxLength: 64, description: 'IPv4 or IPv6 address, or a network no wider than /24 (IPv4) or /64 (IPv6)' }),
    reason: Type.String({ minLength: 1, maxLength: 500, pattern: '^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*$' }),
  },
  { additionalProperties: false },
);

export const BanParam = Type.Object({ ip: Type.String({ minLength: 1, maxLength: 64 }) });

/** What `GET /admin/bans?sort=` orders by (ties by address). */
export const BAN_SORT = ['ip', 'banned_at', 'expires_at'] as const;
export type BanSortField = (typeof BAN_SORT)[number];
export const BanSortQuery = SortQuery(BAN_SORT, 'by address (IPv4 first)');
