import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

export const DkimKeySchema = Type.Object(
  {
    selector: Type.String(),
    algorithm: Type.Union([Type.Literal('rsa'), Type.Literal('ed25519')]),
    bits: Type.Integer(),
    state: Type.Union([Type.Literal('pending'), Type.Literal('active'), Type.Literal('retiring'), Type.Literal('retired')]),
    record_name: Type.String({ description: '<selector>._domainkey.<domain>' }),
    record_value: Type.String({ description: 'the TXT value to publish (one string; split into 255-byte strings in a zone file)' }),
    created_at: Type.String({ format: 'date-time' }),
    activated_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { title: 'DkimKey' },
);
export type DkimKeyView = Static<typeof DkimKeySchema>;

export const SigningOutcomeSchema = Type.Object(
  {
    status: Type.Union([Type.Literal('changed'), Type.Literal('unchanged'), Type.Literal('skipped')]),
    detail: Type.String(),
    reloaded: Type.Boolean(),
  },
  { title: 'DkimSigningOutcome' },
);

export const RotationStatusSchema = Type.Object(
  {
    domain: Type.String(),
    step: Type.String({ description: 'generate, publish, await-visible, await-ttl, switch, grace, remove, done' }),
    new_selector: Type.String(),
    old_selectors: Type.Array(Type.String()),
    waiting: Type.Union([Type.String(), Type.Null()], { description: 'what the rotation waits for now' }),
    wait_until: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { title: 'DkimRotation' },
);

export const DkimResultSchema = Type.Object(
  { domain: Type.String(), keys: Type.Array(DkimKeySchema), signing: SigningOutcomeSchema, rotation: Type.Optional(RotationStatusSchema) },
  { title: 'DkimResult' },
);
export type DkimResult = Static<typeof DkimResultSchema>;

export const DkimBody = Type.Object(
  { ed25519: Type.Optional(Type.Boolean({ description: 'also make an Ed25519 key that signs alongside the RSA key' })) },
  { additionalProperties: false },
);

export const DnsRecordSchema = Type.Object(
  {
    name: Type.String({ description: 'owner name, fully qualified, no trailing dot' }),
    type: Type.String(),
    ttl: Type.Integer(),
    value: Type.Union([Type.String(), Type.Null()], { description: 'null: a value only you know (the public IP), filled in by the live bundle' }),
    purpose: Type.String(),
    where: Type.Union([Type.Literal('zone'), Type.Literal('reverse-zone')], { description: 'reverse-zone: ask the owner of the IP address' }),
  },
  { title: 'DnsRecord' },
);
export type DnsRecord = Static<typeof DnsRecordSchema>;

export const DnsPlanSchema = Type.Object(
  {
    domain: Type.String(),
    mail_host: Type.String(),
    public_ip: Type.Union([Type.String(), Type.Null()]),
    records: Type.Array(DnsRecordSchema),
    mta_sts_policy: Type.String({ description: 'the file served at https://mta-sts.<domain>/.well-known/mta-sts.txt' }),
    zone: Type.String({ description: 'the records as zone-file lines' }),
  },
  { title: 'DnsPlan' },
);
export type DnsPlan = Static<typeof DnsPlanSchema>;

export const PlanQuery = Type.Object(
  {
    mail_host: Type.String({ maxLength: 253, description: 'the mail host name (MX target), e.g. mail.example.org' }),
    public_ip: Type.Optional(Type.String({ maxLength: 64, description: 'its public IPv4 or IPv6 address' })),
  },
  { additionalProperties: false },
);

export const CheckResultSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    status: Type.Union([Type.Literal('pass'), Type.Literal('warn'), Type.Literal('fail'), Type.Literal('unknown')], {
      description: 'warn: a recommendation, never a failure (DNSSEC, and DANE TLSA while the zone is not signed); unknown: could not determine (a timeout is not a failure)',
    }),
    detail: Type.String(),
    fix: Type.Union([Type.String(), Type.Null()], { description: 'what to do about a warn, a fail or an unknown' }),
  },
  { title: 'DeliverabilityCheck' },
);

export const ReportChangeSchema = Type.Object({ id: Type.String(), name: Type.String(), from: Type.Union([Type.String(), Type.Null()]), to: Type.String() }, { title: 'DeliverabilityChange' });

export const DeliverabilityReportSchema = Type.Object(
  {
    id: Type.String(),
    domain: Type.String(),
    mail_host: Type.String(),
    public_ip: Type.Union([Type.String(), Type.Null()]),
    checked_at: Type.String({ format: 'date-time' }),
    ok: Type.Boolean({ description: 'no check failed (warnings allowed)' }),
    counts: Type.Object({ pass: Type.Integer(), warn: Type.Integer(), fail: Type.Integer(), unknown: Type.Integer() }),
    checks: Type.Array(CheckResultSchema),
    dns_queries: Type.Integer({ description: 'DNS questions asked (each once)' }),
    authoritative: Type.Array(Type.String(), { description: 'the servers asked about the domain\'s zone' }),
    milliseconds: Type.Integer(),
    changes: Type.Array(ReportChangeSchema, { description: 'checks whose status differs from the previous saved report (saved reports only)' }),
    files: Type.Array(Type.String(), { description: 'where the saved report was written (saved reports only)' }),
  },
  { title: 'DeliverabilityReport' },
);
export type DeliverabilityReport = Static<typeof DeliverabilityReportSchema>;

export const DeliverabilityBody = Type.Object(
  {
    mail_host: Type.String({ maxLength: 253 }),
    public_ip: Type.Optional(Type.String({ maxLength: 64 })),
    save: Type.Optional(Type.Boolean({ description: 'save it as a report (default true)' })),
  },
  { additionalProperties: false },
);

export const DnsSyncSchema = Type.Object(
  {
    domain: Type.String(),
    provider: Type.Literal('cloudflare'),
    zone_id: Type.String(),
    api_token_set: Type.Boolean({ description: 'a token is stored (it is never returned)' }),
    enabled: Type.Boolean(),
    updated_at: Type.String({ format: 'date-time' }),
    last_sync_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { title: 'DnsSync' },
);
export type DnsSyncView = Static<typeof DnsSyncSchema>;

export const DnsSyncBody = Type.Object(
  {
    zone_id: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9]+$' }),
    api_token: Type.String({ minLength: 1, maxLength: 512, description: 'a zone-limited token with DNS edit permission; stored sealed, never returned' }),
    enabled: Type.Optional(Type.Boolean({ description: 'sync automatically (after key changes and rotations)' })),
  },
  { additionalProperties: false },
);

export const SyncChangeSchema = Type.Object(
  {
    action: Type.Union([Type.Literal('create'), Type.Literal('update'), Type.Literal('delete'), Type.Literal('keep'), Type.Literal('skip')]),
    name: Type.String(),
    type: Type.String(),
    content: Type.String({ description: 'the value to write (for delete: the value removed)' }),
    previous: Type.Union([Type.String(), Type.Null()]),
    reason: Type.String(),
  },
  { title: 'DnsSyncChange' },
);

export const SyncResultSchema = Type.Object(
  {
    domain: Type.String(),
    zone_id: Type.String(),
    dry_run: Type.Boolean(),
    changes: Type.Array(SyncChangeSchema),
    changed: Type.Integer({ description: 'records created, updated or deleted (0 on a dry run)' }),
    verified: Type.Boolean({ description: 'after writing, the records read back equal what was written' }),
  },
  { title: 'DnsSyncResult' },
);
export type SyncResult = Static<typeof SyncResultSchema>;
export const SyncRunBody = Type.Object({ dry_run: Type.Optional(Type.Boolean({ description: 'show the diff, change nothing' })) }, { additionalProperties: false });
