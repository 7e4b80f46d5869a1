import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

const Channel = Type.Union([Type.Literal('stable'), Type.Literal('nightly')]);

export const SettingsSchema = Type.Object(
  {
    update_channel: Channel,
    update_channel_source: Type.Union([Type.Literal('stored'), Type.Literal('default')], { description: 'stored: set through PATCH /admin/settings; default: MAILSVC_UPDATE_CHANNEL' }),
    auto_updates: Type.Boolean({ description: 'the auto-update timer installs new releases of the selected channel' }),
    update_feeds: Type.Object({ stable: Type.String(), nightly: Type.String() }, { description: 'MAILSVC_UPDATE_CHECK_URL_STABLE / _NIGHTLY (read only)' }),
    version: Type.String({ description: 'the running release' }),
  },
  { title: 'Settings' },
);
export type SettingsView = Static<typeof SettingsSchema>;

export const SettingsPatch = Type.Object(
  {
    update_channel: Type.Optional(Channel),
    auto_updates: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1, title: 'SettingsPatch' },
);
export type SettingsPatchInput = Static<typeof SettingsPatch>;
