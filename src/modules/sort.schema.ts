import { Type } from '@sinclair/typebox';
import type { TLiteral, TOptional, TUnion } from '@sinclair/typebox';
import { queryError } from '../shared/errors.js';

/** A list's order: one of its fields, ascending or descending. */
export type Sort<F extends string> = { field: F; desc: boolean };

/** What `sort` takes: `<field>` ascending, `-<field>` descending. */
export type SortValue<F extends string> = F | `-${F}`;

/**
 * The `sort` query parameter of a list route: an enum of `<field>` and
 * `-<field>` for each field the list can be ordered by, so the validator
 * refuses anything else (422 naming `querystring.sort` with the allowed values).
 */
export function SortQuery<F extends string>(fields: readonly F[], defaultOrder: string): TOptional<TUnion<TLiteral<SortValue<F>>[]>> {
  const values = fields.flatMap((f): SortValue<F>[] => [f, `-${f}`]);
  return Type.Optional(
    Type.Union(values.map((v) => Type.Literal(v)), { description: `<field> ascending or -<field> descending: ${fields.join(', ')}; without it ${defaultOrder}. Ties are ordered by the list's key, so paging is stable` }),
  );
}

/**
 * The order a `sort` value asks for, or undefined (the list's default order).
 * The routes' validator already holds `sort` to the fields; this repeats the
 * check for the CLI, which passes `--sort` as typed.
 */
export function sortOf<F extends string>(raw: string | undefined, fields: readonly F[]): Sort<F> | undefined {
  if (raw === undefined || raw === '') return undefined;
  const desc = raw.startsWith('-');
  const field = (desc ? raw.slice(1) : raw) as F;
  if (!fields.includes(field)) {
    const message = `must be one of ${fields.flatMap((f) => [f, `-${f}`]).join(', ')}`;
    throw queryError('sort', message);
  }
  return { field, desc };
}

/** `asc` or `desc`, for Kysely's orderBy. */
export const direction = (sort: Sort<string>): 'asc' | 'desc' => (sort.desc ? 'desc' : 'asc');
