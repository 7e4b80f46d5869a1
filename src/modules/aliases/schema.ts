import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { SortQuery } from '../sort.schema.js';

export const AliasSchema = Type.Object(
  {
    id: Type.Integer(),
    source: Type.String({ description: 'an address, or @domain for a catch-all' }),
    domain: Type.String(),
    destinations: Type.Array(Type.String()),
    active: Type.Boolean(),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'Alias' },
);
export type AliasView = Static<typeof AliasSchema>;

export const AliasParam = Type.Object({ alias: Type.String({ maxLength: 320, description: 'id or source' }) });

/** What `GET /aliases?sort=` orders by (ties by source). */
export const ALIAS_SORT = ['source', 'domain', 'active', 'created_at'] as const;
export type AliasSortField = (typeof ALIAS_SORT)[number];
export const AliasSortQuery = SortQuery(ALIAS_SORT, 'by source');
