import { Type } from '@sinclair/typebox';
import type { Static, TSchema } from '@sinclair/typebox';
import { LIMITS } from '../../shared/limit-keys.js';
import type { LimitSpec } from '../../shared/limit-keys.js';

const described = (l: LimitSpec): string => `${l.description} (${l.unit}; default ${l.default}${l.type === 'size' ? '; accepted with K, M or G' : l.type === 'duration' ? '; accepted with s, m, h, d or w' : ''})`;
const numberOf = (l: LimitSpec): TSchema => (l.type === 'score' ? Type.Number({ description: described(l) }) : Type.Integer({ description: described(l) }));

/** One object, a key per limit: the values in force in the service. */
export const LimitsObject = Type.Object(Object.fromEntries(LIMITS.map((l) => [l.key, numberOf(l)])), { additionalProperties: false, title: 'Limits' });

/** Any subset of the limits; a value is a number or a text such as 50M or 10m. Unknown keys are refused by the service, by name. */
export const LimitsPatch = Type.Object(
  Object.fromEntries(LIMITS.map((l) => [l.key, Type.Optional(Type.Union([Type.Number(), Type.String({ maxLength: 32 })], { description: described(l) }))])),
  { title: 'LimitsPatch', maxProperties: 100, additionalProperties: false },
);

export const DaemonOutcome = Type.Object({
  daemon: Type.String(),
  status: Type.Union([Type.Literal('changed'), Type.Literal('unchanged'), Type.Literal('skipped')]),
  detail: Type.String(),
  reloaded: Type.Boolean(),
});
export type DaemonOutcome = Static<typeof DaemonOutcome>;

export const ApplyReport = Type.Object(
  {
    daemons: Type.Array(DaemonOutcome),
    changed: Type.Array(Type.String(), { description: 'files whose content or mode changed' }),
    created: Type.Array(Type.String(), { description: 'files that did not exist before' }),
    milliseconds: Type.Integer({ description: 'time the apply took' }),
  },
  { title: 'LimitsApplyReport' },
);
export type ApplyReport = Static<typeof ApplyReport>;

/** A row of `limits show`: the value, its default, what the daemon really runs with, and whether they differ. */
export const LimitRow = Type.Object({
  key: Type.String(),
  value: Type.Number(),
  default: Type.Number(),
  unit: Type.String(),
  in_force: Type.Union([Type.Number(), Type.Null()], { description: 'read from the daemon; null when it cannot be read (not installed, not running)' }),
  drift: Type.Boolean({ description: 'the value in force differs from the value' }),
  applies_to: Type.Array(Type.String()),
});
export type LimitRow = Static<typeof LimitRow>;
