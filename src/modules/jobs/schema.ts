import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

export const JobStateSchema = Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('succeeded'), Type.Literal('failed')]);
export type JobState = Static<typeof JobStateSchema>;

export const JobSchema = Type.Object(
  {
    id: Type.String(),
    kind: Type.String(),
    state: JobStateSchema,
    progress: Type.Number({ minimum: 0, maximum: 1 }),
    message: Type.String({ description: 'what the job is doing; for a failed job, why it failed' }),
    result: Type.Unknown({ description: 'the outcome of a succeeded job (its shape depends on the kind); for a failed job null, or what its kind keeps to say why (the certs jobs: {"error": {"code", "retry_after"}})' }),
  },
  { title: 'Job' },
);
export type Job = Static<typeof JobSchema>;

export const JobStartedSchema = Type.Object({ job_id: Type.String() }, { title: 'JobStarted' });
export type JobStarted = Static<typeof JobStartedSchema>;

export const JobParam = Type.Object({ id: Type.String({ pattern: '^[a-z0-9]{1,32}$' }) });

export const SampleJobBody = Type.Object(
  {
    count: Type.Integer({ minimum: 1, maximum: 1000, description: 'how far to count' }),
    step_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000, description: 'pause per step, default 10' })),
    fail_at: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'fail on reaching this number' })),
  },
  { additionalProperties: false },
);
export type SampleJobInput = Static<typeof SampleJobBody>;
