import { Type } from '@sinclair/typebox';
import type { Static, TInteger, TOptional } from '@sinclair/typebox';
import { MAX_SEND_RATE, SEND_RATE_FIELDS } from '../../shared/send-rate.js';
import type { SendRateField } from '../../shared/send-rate.js';

import { MAX_QUOTA_BYTES } from './quota.js';
import { SortQuery } from '../sort.schema.js';

export { MAX_QUOTA_BYTES, MAX_SEND_RATE };

const Rate = Type.Integer({ minimum: 0, maximum: MAX_SEND_RATE, description: 'messages; 0 = inherit the global default' });
const rates = <T>(of: (f: SendRateField) => T): Record<SendRateField, T> =>
  Object.fromEntries(SEND_RATE_FIELDS.map((f) => [f, of(f)])) as Record<SendRateField, T>;
export const SendRateFields: Record<SendRateField, TInteger> = rates(() => Rate);
const optionalRates: Record<SendRateField, TOptional<TInteger>> = rates(() => Type.Optional(Rate));

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
export type AccountView = Static<typeof AccountSchema>;

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
export const AccountPatchBody = Type.Object(
  {
    password: Type.Optional(Password),
    revoke_app_passwords: Type.Optional(Type.Boolean({ description: 'with password: revoke every app password of the account too (a reset after a compromise); app passwords survive a new password otherwise' })),
    ...changeable,
  },
  { additionalProperties: false },
);
export const AccountParam = Type.Object({ id: Type.String({ maxLength: 320, description: 'id or address' }) });
export type AccountInput = Static<typeof AccountCreateBody>;
export type AccountPatch = Static<typeof AccountPatchBody>;

/** What `GET /accounts?sort=` orders by (ties by address). */
export const ACCOUNT_SORT = ['address', 'display_name', 'quota_bytes', 'active', 'created_at'] as const;
export type AccountSortField = (typeof ACCOUNT_SORT)[number];
export const AccountSortQuery = SortQuery(ACCOUNT_SORT, 'by address');
