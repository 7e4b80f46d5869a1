import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

export const UpdateCheckSchema = Type.Object(
  {
    channel: Type.Union([Type.Literal('stable'), Type.Literal('nightly')]),
    current_version: Type.String(),
    available_version: Type.String(),
    update_available: Type.Boolean({ description: 'the channel offers a newer version than the one running' }),
    downgrade: Type.Boolean({ description: 'the channel offers an older version (e.g. nightly → stable)' }),
    downgrade_allowed: Type.Boolean({ description: 'the older release knows every migration applied to this database, so apply --allow-downgrade may install it' }),
    feed_url: Type.String(),
    download_url: Type.String(),
    published_at: Type.String(),
  },
  { title: 'UpdateCheck' },
);
export type UpdateCheck = Static<typeof UpdateCheckSchema>;

export const ApplyUpdateBody = Type.Object(
  {
    allow_downgrade: Type.Optional(Type.Boolean({ description: 'install an older release when its migrations allow it' })),
  },
  { additionalProperties: false, title: 'ApplyUpdateRequest' },
);
export type ApplyUpdateInput = Static<typeof ApplyUpdateBody>;

/** The result of an update job that switched releases. */
export type UpdateReport = {
  from: string;
  to: string;
  outcome: 'updated';
  seconds: number;
  steps: { step: string; seconds: number }[];
  snapshot: string;
};
