import { Type } from '@sinclair/typebox';
import { MAX_QUOTA_BYTES, MAX_SEND_RATE } from './account.service.js';

const Rate = Type.Integer({ minimum: 0, maximum: MAX_SEND_RATE, description: 'messages; 0 = inherit the global default' });
export const SendRateFields = {
  send_rate_burst: Rate,
  send_rate_per_minute: Rate,
  send_rate_per_hour: Rate,
  send_rate_per_day: Rate,
  send_rate_per_week: Rate,
  send_rate_per_month: Rate,
};
const OptionalRate = Type.Optional(Rate);
const optionalRates = {
  send_rate_burst: OptionalRate,
  send_rate_per_minute: OptionalRate,
  send_rate_per_hour: OptionalRate,
  send_rate_per_day: OptionalRate,
  send_rate_per_week: OptionalRate,
  send_rate_per_month: OptionalRate,
};

export const AccountSchema = Type.Object(
  {
    id: Type.Integer(),
    address: Type.String(),
    domain: Type.String(),
    display_name: Type.String(),
    quota_bytes: Type.Integer({ description: '0 = no quota' }),
    active: Type.Boolean(),
    require_app_password: Type.Boolean(),
    ...SendRateFields,
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { title: 'Account' },
);

const Quota = Type.Integer({ minimum: 0, maximum: MAX_QUOTA_BYTES });
const Password = Type.String({ maxLength: 1024 });
const changeable = {
  display_name: Type.Optional(Type.String({ maxLength: 255 })),
  quota_bytes: Type.Optional(Quota),
  active: Type.Optional(Type.Boolean()),
  require_app_password: Type.Optional(Type.Boolean()),
  ...optionalRates,
};
export const AccountCreateBody = Type.Object({ address: Type.String({ maxLength: 320 }), password: Password, ...changeable }, { additionalProperties: false });
export const AccountPatchBody = Type.Object({ password: Type.Optional(Password), ...changeable }, { additionalProperties: false });
export const AccountParam = Type.Object({ id: Type.String({ maxLength: 320, description: 'id or address' }) });

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
export const AppPasswordCreated = Type.Object(
  { ...AppPasswordSchema.properties, password: Type.String({ description: 'shown once: <id>.<secret>' }) },
  { title: 'AppPasswordCreated' },
);
export const AppPasswordBody = Type.Object(
  { name: Type.String({ maxLength: 255 }), expires_at: Type.Optional(Type.String({ maxLength: 64 })) },
  { additionalProperties: false },
);
