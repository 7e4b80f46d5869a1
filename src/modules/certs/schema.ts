import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

const Time = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

export const PortProofSchema = Type.Object({
  service: Type.String(),
  port: Type.Integer(),
  servedSha256: Type.Union([Type.String(), Type.Null()]),
  matches: Type.Boolean(),
  detail: Type.Optional(Type.String()),
});
export const ProofSchema = Type.Object({ ok: Type.Boolean(), ports: Type.Array(PortProofSchema) }, { title: 'CertificateProof' });

export const CertSchema = Type.Object(
  {
    name: Type.String({ description: 'the certificate name (mail)' }),
    names: Type.Array(Type.String(), { description: 'the DNS names it holds (or was last asked for)' }),
    state: Type.Union([Type.Literal('none'), Type.Literal('valid'), Type.Literal('expiring'), Type.Literal('expired'), Type.Literal('revoked')]),
    serial: Type.Union([Type.String(), Type.Null()]),
    sha256: Type.Union([Type.String(), Type.Null()], { description: 'SHA-256 of the leaf certificate (DER), as the on-the-wire proof compares it' }),
    not_before: Time,
    not_after: Time,
    days_left: Type.Union([Type.Integer(), Type.Null()]),
    renew_at: Time,
    ari_window: Type.Union([Type.Object({ start: Type.String({ format: 'date-time' }), end: Type.String({ format: 'date-time' }) }), Type.Null()]),
    issued_at: Time,
    revoked_at: Time,
    last_attempt_at: Time,
    last_error: Type.Union([Type.String(), Type.Null()]),
    failures: Type.Integer({ description: 'failed attempts in a row' }),
    next_attempt_at: Time,
    proof: Type.Union([ProofSchema, Type.Null()]),
    pending: Type.Union(
      [
        Type.Object({
          sha256: Type.String({ description: 'SHA-256 of the held-back leaf' }),
          not_after: Time,
          issued_at: Time,
        }),
        Type.Null(),
      ],
      { description: 'a certificate with a new key for the mail host, held back until its DANE record is published everywhere and the TTL has passed (the renewal check deploys it then; `mailsvc dns dane status` says what it waits for); null when none' },
    ),
  },
  { title: 'Certificate' },
);
export type CertView = Static<typeof CertSchema>;

export const CertDetailSchema = Type.Object({ ...CertSchema.properties, chain_pem: Type.Union([Type.String(), Type.Null()], { description: 'the chain in service (public); the key is never shown' }) }, { title: 'CertificateDetail' });

export const CertListSchema = Type.Object(
  { items: Type.Array(CertSchema), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() },
  { title: 'CertificateList' },
);

export const RenewOutcomeSchema = Type.Object(
  { name: Type.String(), action: Type.Union([Type.Literal('renewed'), Type.Literal('skipped'), Type.Literal('failed')]), detail: Type.String(), certificate: CertSchema },
  { title: 'CertificateRenewal' },
);
export type RenewOutcome = Static<typeof RenewOutcomeSchema>;

export const CertParams = Type.Object({ name: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', description: 'the certificate name' }) });

export const IssueBody = Type.Object(
  {
    name: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$', description: 'the certificate name (default mail)' })),
    names: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { minItems: 1, maxItems: 100, description: "the DNS names (default: the mail host, the panel, and mta-sts./autoconfig. per domain as configured); each must be one of this server's" })),
    new_key: Type.Optional(Type.Boolean({ description: 'a new private key instead of the one in service' })),
  },
  { additionalProperties: false },
);

export const RenewBody = Type.Object(
  {
    name: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$' })),
    force: Type.Optional(Type.Boolean({ description: 'renew even when not due' })),
  },
  { additionalProperties: false },
);

export const RevokeBody = Type.Object(
  { reason: Type.Optional(Type.Integer({ minimum: 0, maximum: 5, description: 'RFC 5280 reason code: 0 unspecified, 1 keyCompromise, 4 superseded, 5 cessationOfOperation' })) },
  { additionalProperties: false },
);

/** The jobs' inputs: what POST /admin/certs/issue and /renew (and the CLI) were given. */
export type IssueJobInput = { name: string; names?: string[] | undefined; new_key?: boolean | undefined };
export type RenewJobInput = { name?: string | undefined; force?: boolean | undefined };
