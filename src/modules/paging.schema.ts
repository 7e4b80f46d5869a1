import { Type } from '@sinclair/typebox';
import type { TSchema } from '@sinclair/typebox';
import { badRequest } from '../shared/errors.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../shared/paging.js';
import type { Page } from '../shared/paging.js';

// Query strings are text: numbers are checked by pattern and read here (no type coercion).
export const PageQuery = {
  limit: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$', description: `1 to ${MAX_LIMIT}, default ${DEFAULT_LIMIT}` })),
  offset: Type.Optional(Type.String({ pattern: '^[0-9]{1,9}$' })),
};

export function pageOf(q: { limit?: string | undefined; offset?: string | undefined }): Page {
  const limit = q.limit === undefined ? DEFAULT_LIMIT : Number(q.limit);
  if (limit < 1 || limit > MAX_LIMIT) throw badRequest(`limit must be from 1 to ${MAX_LIMIT}`);
  return { limit, offset: q.offset === undefined ? 0 : Number(q.offset) };
}

export const PagedOf = <T extends TSchema>(item: T, title: string) =>
  Type.Object({ items: Type.Array(item), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() }, { title });
