import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

export const DomainSchema = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    active: Type.Boolean(),
    accounts: Type.Optional(Type.Integer()),
    aliases: Type.Optional(Type.Integer()),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'Domain' },
);
export type DomainView = Static<typeof DomainSchema>;

export const DomainParam = Type.Object({ domain: Type.String({ maxLength: 253, description: 'id or name' }) });
export const DomainCreateBody = Type.Object({ name: Type.String({ maxLength: 253 }) }, { additionalProperties: false });
export const DomainPatchBody = Type.Object({ active: Type.Boolean() }, { additionalProperties: false });
