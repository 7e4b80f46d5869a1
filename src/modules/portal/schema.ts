import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { VACATION_BODY_MAX, VACATION_DAYS, VACATION_SUBJECT_MAX } from '../../shared/sieve-rules.js';
import { APP_PASSWORD_NAME_MAX } from '../app-passwords/index.js';

const DATE = { pattern: '^\\d{4}-\\d{2}-\\d{2}$', maxLength: 10 };

export const SignInBody = Type.Object(
  {
    address: Type.String({ maxLength: 320, description: 'the mailbox address' }),
    password: Type.String({ maxLength: 1024, description: 'the mailbox password (an app password is refused)' }),
    code: Type.Optional(Type.String({ maxLength: 16, description: 'the 6-digit TOTP code, when the mailbox has TOTP on' })),
  },
  { additionalProperties: false },
);

export const SessionView = Type.Object(
  { address: Type.String(), csrf: Type.String({ description: 'send it back in the X-Portal-CSRF header of every change' }), expires_at: Type.String({ format: 'date-time' }) },
  { title: 'PortalSession' },
);

export const OverviewView = Type.Object(
  {
    address: Type.String(),
    display_name: Type.String(),
    quota_bytes: Type.Integer({ description: 'the limit the administrator set; 0: none' }),
    totp_enabled: Type.Boolean(),
    require_app_password: Type.Boolean({ description: 'mail clients must use an app password' }),
    profiles: Type.Boolean({ description: 'device configuration profiles are available' }),
  },
  { title: 'PortalOverview' },
);

export const UsageView = Type.Object(
  {
    storage_bytes: Type.Integer(),
    storage_limit_bytes: Type.Union([Type.Integer(), Type.Null()]),
    messages: Type.Integer(),
    message_limit: Type.Union([Type.Integer(), Type.Null()]),
  },
  { title: 'PortalUsage' },
);

export const PasswordBody = Type.Object(
  { current_password: Type.String({ maxLength: 1024 }), new_password: Type.String({ maxLength: 1024 }) },
  { additionalProperties: false },
);

export const PortalAppPasswordBody = Type.Object(
  { name: Type.String({ maxLength: APP_PASSWORD_NAME_MAX }), expires_at: Type.Optional(Type.String({ maxLength: 64, description: 'ISO 8601 time; none: it never expires' })) },
  { additionalProperties: false },
);
export const AppIdParam = Type.Object({ appId: Type.String({ maxLength: 32 }) });

export const ProfileBody = Type.Object(
  { app_password_name: Type.Optional(Type.String({ maxLength: APP_PASSWORD_NAME_MAX, description: 'put a fresh app password of this name inside the profile; none: no password inside' })) },
  { additionalProperties: false },
);

export const ForwardingSchema = Type.Object(
  {
    to: Type.Union([Type.String({ maxLength: 320 }), Type.Null()], { description: 'forward every message here; null: no forwarding' }),
    keep_copy: Type.Boolean({ description: 'also keep a copy in this mailbox' }),
  },
  { additionalProperties: false, title: 'PortalForwarding' },
);
export type ForwardingView = Static<typeof ForwardingSchema>;

export const VacationSchema = Type.Object(
  {
    enabled: Type.Boolean(),
    subject: Type.String({ maxLength: VACATION_SUBJECT_MAX }),
    body: Type.String({ maxLength: VACATION_BODY_MAX }),
    start: Type.Union([Type.String(DATE), Type.Null()], { description: 'first day (server time), or null: from now' }),
    end: Type.Union([Type.String(DATE), Type.Null()], { description: 'last day (server time), or null: until switched off' }),
    days: Type.Integer({ minimum: VACATION_DAYS.min, maximum: VACATION_DAYS.max, description: 'one reply per sender in this many days' }),
  },
  { additionalProperties: false, title: 'PortalVacation' },
);
export type VacationView = Static<typeof VacationSchema>;

/** PUT's body: the dates may be left out (the same as null: from now, until switched off), as docs/portal.md says. */
export const VacationBody = Type.Object(
  {
    ...VacationSchema.properties,
    start: Type.Optional(VacationSchema.properties.start),
    end: Type.Optional(VacationSchema.properties.end),
  },
  { additionalProperties: false, title: 'PortalVacationChange' },
);

export const TotpStart = Type.Object({ secret: Type.String({ description: 'base32; shown once, while enrolling' }), uri: Type.String({ description: 'otpauth:// URI for an authenticator app' }) }, { title: 'PortalTotpEnrolment' });
export const CodeBody = Type.Object({ code: Type.String({ maxLength: 16 }) }, { additionalProperties: false });

export const PortalAccessSchema = Type.Object(
  { disabled_domains: Type.Array(Type.String()), disabled_mailboxes: Type.Array(Type.String()) },
  { title: 'PortalAccess' },
);
export type PortalAccessView = Static<typeof PortalAccessSchema>;
export const AccessBody = Type.Object({ self_service: Type.Boolean({ description: 'false: the portal refuses this domain\'s or mailbox\'s users' }) }, { additionalProperties: false });
export const AccessResult = Type.Object({ name: Type.String(), self_service: Type.Boolean(), changed: Type.Boolean() }, { title: 'PortalAccessChange' });
export const DomainParam = Type.Object({ name: Type.String({ maxLength: 253 }) });
export const MailboxParam = Type.Object({ address: Type.String({ maxLength: 320 }) });
