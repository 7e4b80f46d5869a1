import { Type } from '@sinclair/typebox';

/** Every error body: `{"detail"}`, plus `errors` for validation (docs/contract.md, Errors). */
export const ErrorBody = Type.Object(
  {
    detail: Type.String(),
    errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { $id: 'ErrorBody', title: 'Error' },
);

export const errorResponses = (...statuses: number[]): Record<number, unknown> =>
  Object.fromEntries(statuses.map((s) => [s, Type.Ref('ErrorBody')]));
