import { Type } from '@sinclair/typebox';

export const ProviderRecord = Type.Object(
  {
    code: Type.String(),
    enabled: Type.Boolean(),
    base_url: Type.String(),
    client_id: Type.Union([Type.String(), Type.Null()]),
    has_client_secret: Type.Boolean(),
    has_api_key: Type.Boolean(),
    send_path: Type.String(),
    from_sender: Type.Union([Type.String(), Type.Null()]),
    route: Type.String(),
    label: Type.String(),
  },
  { title: 'SmsProvider' },
);

export const ProviderUpdateBody = Type.Object(
  {
    code: Type.String({ maxLength: 64 }),
    enabled: Type.Optional(Type.Boolean()),
    base_url: Type.Optional(Type.String({ maxLength: 2048 })),
    client_id: Type.Optional(Type.String({ maxLength: 1024 })),
    send_path: Type.Optional(Type.String({ maxLength: 1024 })),
    from_sender: Type.Optional(Type.String({ maxLength: 255 })),
    route: Type.Optional(Type.String({ maxLength: 255 })),
    clear_secrets: Type.Optional(Type.Boolean()),
    client_secret: Type.Optional(Type.String({ maxLength: 4096 })),
    api_key: Type.Optional(Type.String({ maxLength: 4096 })),
  },
  { additionalProperties: false },
);
