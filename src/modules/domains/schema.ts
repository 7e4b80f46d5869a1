import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { SortQuery } from '../sort.schema.js';

export const DomainSchema = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    active: Type.Boolean(),
    accounts: Type.Optional(Type.Integer()),
    aliases: Type.Optional(Type.Integer()),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
    dkim: Type.Optional(
      Type.Object(
        { keys: Type.Array(Type.Object({ selector: Type.String(), record_name: Type.String(), record_value: Type.String() })) },
        { description: 'the DKIM keys made with generate_dkim: publish each record_value at its record_name' },
      ),
    ),
  },
  { title: 'Domain' },
);
export type DomainView = Static<typeof DomainSchema>;

export { DomainParam } from '../domain-param.schema.js';
export const DomainCreateBody = Type.Object(
  { name: Type.String({ maxLength: 253 }), generate_dkim: Type.Optional(Type.Boolean({ description: 'also make its DKIM keys and sign its mail with them' })) },
  { additionalProperties: false },
);
export const DomainPatchBody = Type.Object({ active: Type.Boolean() }, { additionalProperties: false });

/** What `GET /domains?sort=` orders by (ties by name). */
export const DOMAIN_SORT = ['name', 'active', 'accounts', 'aliases', 'created_at'] as const;
export type DomainSortField = (typeof DOMAIN_SORT)[number];
export const DomainSortQuery = SortQuery(DOMAIN_SORT, 'by name');
