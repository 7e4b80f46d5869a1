import { loadHelperSettings } from '../../src/config/helper-settings.js';
import type { HelperConfig } from '../../src/helper/index.js';

/** The helper's settings as an empty environment gives them, with a test's own paths over them. */
export function helperConfig(over: Partial<HelperConfig> = {}): HelperConfig {
  return { ...loadHelperSettings({}), ...over };
}
