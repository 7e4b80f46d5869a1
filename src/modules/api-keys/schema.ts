import { Type } from '@sinclair/typebox';
import { API_KEY_SCOPES } from '../route-types.js';

// One of API_KEY_SCOPES (an enum in the OpenAPI document); the service narrows the type.
export const ScopeName = Type.String({ enum: [...API_KEY_SCOPES], title: 'ApiKeyScope' });

export const ApiKeyBody = Type.Object(
  {
    name: Type.String({ maxLength: 100 }),
    scopes: Type.Array(ScopeName, { minItems: 1, maxItems: API_KEY_SCOPES.length }),
    expires_at: Type.String({ maxLength: 64, description: 'ISO 8601 time, at most 366 days ahead' }),
  },
  { additionalProperties: false },
);

export const ApiKey = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    scopes: Type.Array(ScopeName),
    created_by: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    expires_at: Type.String({ format: 'date-time' }),
    active: Type.Boolean(),
  },
  { title: 'ApiKey' },
);

export const ApiKeyCreated = Type.Composite([ApiKey, Type.Object({ key: Type.String({ description: 'shown once: send it as Authorization: Bearer <key>' }) })], {
  title: 'ApiKeyCreated',
});

export const ApiKeyParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
