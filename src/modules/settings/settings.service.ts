import type { UpdateChannel, UpdateSettings } from '../../config/update-settings.js';
import { UPDATE_CHANNELS } from '../../config/update-settings.js';
import type { Clock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';
import type { SettingsRepository } from './settings.repository.js';
import type { SettingsPatchInput, SettingsView } from './schema.js';

/**
 * The settings an administrator changes at run time (spec: Versioning). A
 * stored value wins over its MAILSVC_* default, so the panel and the API can
 * switch the channel without editing the settings file.
 */
export class SettingsService {
  constructor(
    private readonly repo: SettingsRepository,
    private readonly defaults: UpdateSettings,
    private readonly clock: Clock,
    private readonly version: string,
  ) {}

  async get(): Promise<SettingsView> {
    const stored = await this.repo.all();
    const channel = stored.update_channel;
    const known = channel !== undefined && (UPDATE_CHANNELS as readonly string[]).includes(channel);
    return {
      update_channel: known ? (channel as UpdateChannel) : this.defaults.channel,
      update_channel_source: known ? 'stored' : 'default',
      auto_updates: stored.auto_updates === undefined ? this.defaults.autoUpdates : stored.auto_updates === 'yes',
      update_feeds: { ...this.defaults.feedUrls },
      version: this.version,
    };
  }

  async channel(): Promise<UpdateChannel> {
    return (await this.get()).update_channel;
  }

  /** Any subset; a bad value changes nothing. */
  async update(patch: SettingsPatchInput): Promise<SettingsView> {
    const values: Record<string, string> = {};
    if (patch.update_channel !== undefined) {
      if (!(UPDATE_CHANNELS as readonly string[]).includes(patch.update_channel)) throw new AppError('validation', 'update_channel must be stable or nightly', { errors: [{ path: '/update_channel', message: 'must be stable or nightly' }] });
      values.update_channel = patch.update_channel;
    }
    if (patch.auto_updates !== undefined) values.auto_updates = patch.auto_updates ? 'yes' : 'no';
    if (Object.keys(values).length === 0) throw new AppError('validation', 'name at least one setting: update_channel or auto_updates');
    await this.repo.put(values, this.clock.now());
    return this.get();
  }
}
