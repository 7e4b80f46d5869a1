import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

export const HealthDetailsSchema = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')], { description: 'degraded when anything in degraded_by' }),
    degraded_by: Type.Array(Type.String(), {
      description:
        "why the status is degraded (empty when ok): 'database' (no answer), 'schema' (behind the latest), 'redis' (configured, no answer in time), 'backup verify' (the last one failed), 'component <name>' (a component down; unknown never counts), 'tls <service>:<port>' (at its last reading the port was not served, served a stale certificate after a deploy, or its certificate expires within 14 days), 'tls deploy' (the last certificate deploy failed its proof on the wire)",
    }),
    version: Type.String(),
    uptime_seconds: Type.Integer(),
    database: Type.Object({
      dialect: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres'), Type.Literal('mysql')]),
      reachable: Type.Boolean(),
      schema_version: Type.Union([Type.String(), Type.Null()]),
      schema_latest: Type.String(),
    }),
    redis: Type.Object({ configured: Type.Boolean(), reachable: Type.Union([Type.Boolean(), Type.Null()]) }),
    components: Type.Record(
      Type.String(),
      Type.Object({ status: Type.Union([Type.Literal('up'), Type.Literal('down'), Type.Literal('unknown')]), detail: Type.Union([Type.String(), Type.Null()]) }),
      { description: "Each component (database, redis, postfix, dovecot, rspamd, fail2ban, nftables, postsrsd) by its own probe; unknown: could not tell (no answer in time, not installed, no systemd), or not needed (nftables.service not running while mailsvc's firewall is off)" },
    ),
    backups: Type.Object(
      {
        last_backup: Type.Union([Type.String(), Type.Null()], { description: 'id of the newest complete backup' }),
        completed_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
        verify_ok: Type.Union([Type.Boolean(), Type.Null()], { description: "result of its last `backup verify` (null: not verified yet); false makes the status degraded" }),
        verified_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      },
      { description: 'the newest backup and its last verify (read from MAILSVC_BACKUP_LOCAL_DIR)' },
    ),
    tls: Type.Object(
      {
        last_check_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'when a port was last read (mailsvc tls check, its daily timer, or a deploy\'s proof)' }),
        problems: Type.Array(Type.String(), { description: '<service>:<port> of each port with a certificate problem at its last reading' }),
        last_deploy: Type.Union([
          Type.Object({ certificate: Type.String(), ok: Type.Boolean({ description: 'false: a port did not serve it even after a restart (rolled back)' }), at: Type.String({ format: 'date-time' }), detail: Type.String() }),
          Type.Null(),
        ]),
      },
      { description: 'the certificates as served (docs/tls.md)' },
    ),
  },
  { title: 'HealthDetails' },
);
export type HealthDetails = Static<typeof HealthDetailsSchema>;
