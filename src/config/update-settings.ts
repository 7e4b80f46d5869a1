import { basename, dirname, isAbsolute } from 'node:path';
import { SettingsError } from './settings-error.js';

export const UPDATE_CHANNELS = ['stable', 'nightly'] as const;
export type UpdateChannel = (typeof UPDATE_CHANNELS)[number];

/** Where the project publishes its feeds unless MAILSVC_UPDATE_CHECK_URL_* says otherwise. */
export const DEFAULT_FEED_URLS: Readonly<Record<UpdateChannel, string>> = {
  stable: 'https://updates.mailsvc.org/stable',
  nightly: 'https://updates.mailsvc.org/nightly',
};

export type UpdateSettings = Readonly<{
  /** MAILSVC_UPDATE_CHANNEL: the channel until one is stored (PATCH /admin/settings); a stored one wins. */
  channel: UpdateChannel;
  /** Each channel's feed: `<url>/version.json` (a URL ending in .json is the file itself). */
  feedUrls: Readonly<Record<UpdateChannel, string>>;
  /** MAILSVC_ENABLE_AUTO_UPDATES: the installer enables the auto-update timer; a stored value wins at run time. */
  autoUpdates: boolean;
  /** MAILSVC_INSTALL_ROOT: holds releases/<version> and the `current` symlink. */
  installRoot: string;
  /** MAILSVC_UPDATE_HEALTH_TIMEOUT: seconds a restarted service has to answer /health/details with status ok. */
  healthTimeout: number;
  /** MAILSVC_UPDATE_MAX_BYTES: the largest package archive downloaded. */
  maxArchiveBytes: number;
  /** MAILSVC_UPDATE_CA_FILE: a PEM file of CA certificates the feed's server may also be signed by (an in-house mirror with a private CA). */
  caFile: string | undefined;
}>;

type Source = Record<string, string | undefined>;
const val = (src: Source, key: string): string | undefined => (src[key] === undefined || src[key] === '' ? undefined : src[key]);

function feedUrl(src: Source, key: string, dflt: string): string {
  const v = val(src, key) ?? dflt;
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new SettingsError(key, `must be an https URL, got "${v}"`);
  }
  if (url.protocol !== 'https:') throw new SettingsError(key, 'must be an https URL (the feed is fetched through the outbound guard)');
  return v.replace(/\/+$/, '');
}

/** The release this program runs from is `<root>/releases/<version>`: then `<root>` is the installation. */
export function installRootOf(packageRoot: string): string | undefined {
  return basename(dirname(packageRoot)) === 'releases' ? dirname(dirname(packageRoot)) : undefined;
}

export function loadUpdateSettings(src: Source, packageRoot: string, bool: (key: string, dflt: boolean) => boolean, int: (key: string, dflt: number, min: number, max: number) => number): UpdateSettings {
  const channel = val(src, 'MAILSVC_UPDATE_CHANNEL') ?? 'stable';
  if (!(UPDATE_CHANNELS as readonly string[]).includes(channel)) throw new SettingsError('MAILSVC_UPDATE_CHANNEL', `must be stable or nightly, got "${channel}"`);
  const installRoot = val(src, 'MAILSVC_INSTALL_ROOT') ?? installRootOf(packageRoot) ?? '/opt/mailsvc';
  if (!isAbsolute(installRoot)) throw new SettingsError('MAILSVC_INSTALL_ROOT', `must be an absolute path, got "${installRoot}"`);
  const caFile = val(src, 'MAILSVC_UPDATE_CA_FILE');
  if (caFile !== undefined && !isAbsolute(caFile)) throw new SettingsError('MAILSVC_UPDATE_CA_FILE', `must be an absolute path to a PEM file, got "${caFile}"`);
  return Object.freeze({
    channel: channel as UpdateChannel,
    feedUrls: Object.freeze({
      stable: feedUrl(src, 'MAILSVC_UPDATE_CHECK_URL_STABLE', DEFAULT_FEED_URLS.stable),
      nightly: feedUrl(src, 'MAILSVC_UPDATE_CHECK_URL_NIGHTLY', DEFAULT_FEED_URLS.nightly),
    }),
    autoUpdates: bool('MAILSVC_ENABLE_AUTO_UPDATES', false),
    installRoot,
    healthTimeout: int('MAILSVC_UPDATE_HEALTH_TIMEOUT', 60, 5, 3600),
    maxArchiveBytes: int('MAILSVC_UPDATE_MAX_BYTES', 512 * 1024 * 1024, 1024 * 1024, 8 * 1024 * 1024 * 1024),
    caFile,
  });
}
