/** A setting that could not be read; the message names the key. */
export class SettingsError extends Error {
  constructor(readonly key: string, reason: string) {
    super(`Invalid setting ${key}: ${reason}`);
  }
}
