import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

export const CHECK_STATUSES = ['ok', 'warn', 'fail', 'unknown'] as const;
export type CheckStatus = (typeof CHECK_STATUSES)[number];

export const DoctorCheckSchema = Type.Object(
  {
    id: Type.String({ description: 'stable id of the check, e.g. `daemon.postfix`, `tls.submission`, `timer.backup`' }),
    name: Type.String({ description: 'what is checked, for people' }),
    status: Type.Union(CHECK_STATUSES.map((s) => Type.Literal(s)), {
      description: 'ok; warn (works, needs attention soon); fail (broken); unknown (could not be checked: not installed here, no systemd, no answer in time)',
    }),
    detail: Type.String({ description: 'what was found' }),
    fix: Type.Union([Type.String(), Type.Null()], { description: 'what to do (null when ok)' }),
  },
  { title: 'DoctorCheck' },
);
export type DoctorCheck = Static<typeof DoctorCheckSchema>;

export const DoctorReportSchema = Type.Object(
  {
    generated_at: Type.String({ format: 'date-time' }),
    status: Type.Union([Type.Literal('ok'), Type.Literal('needs_attention'), Type.Literal('unknown')], {
      description: 'ok: nothing fails and nothing warns; needs_attention: something fails or warns; unknown: nothing could be checked',
    }),
    summary: Type.String({ description: '"ok", "needs attention: N failing, M warnings" or "nothing could be checked"' }),
    counts: Type.Object({ ok: Type.Integer(), warn: Type.Integer(), fail: Type.Integer(), unknown: Type.Integer() }),
    checks: Type.Array(DoctorCheckSchema),
  },
  { title: 'DoctorReport' },
);
export type DoctorReport = Static<typeof DoctorReportSchema>;
