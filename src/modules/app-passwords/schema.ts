import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

export const AppPasswordSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    last_used_ip: Type.Union([Type.String(), Type.Null()]),
    active: Type.Boolean(),
  },
  { title: 'AppPassword' },
);
export type AppPasswordView = Static<typeof AppPasswordSchema>;

export const AppPasswordCreated = Type.Object(
  { ...AppPasswordSchema.properties, password: Type.String({ description: 'shown once: <id>.<secret>' }) },
  { title: 'AppPasswordCreated' },
);
export type AppPasswordCreated = Static<typeof AppPasswordCreated>;

/** An app password's name: what the user calls the device ("Thunderbird on laptop"), never a document. */
export const APP_PASSWORD_NAME_MAX = 64;

export const AppPasswordBody = Type.Object(
  { name: Type.String({ maxLength: APP_PASSWORD_NAME_MAX }), expires_at: Type.Optional(Type.String({ maxLength: 64 })) },
  { additionalProperties: false },
);
export const AccountParam = Type.Object({ id: Type.String({ maxLength: 320, description: 'id or address' }) });
export const AppPasswordParam = Type.Object({ id: Type.String({ maxLength: 320 }), appId: Type.String({ maxLength: 32 }) });
