import { join, resolve } from 'node:path';
import { detectLayout } from './layout.js';
import type { Layout } from './layout.js';
import { readSettingsFile } from './settings-file.js';
import { trustedFileValues } from './trusted-file.js';

type Source = Record<string, string | undefined>;
const str = (src: Source, key: string): string | undefined => (src[key] === undefined || src[key] === '' ? undefined : src[key]);

/**
 * Where this process's settings come from: the settings file (installed:
 * /etc/mailsvc/mailsvc.conf, whoever runs: the service, the CLI as root or as
 * mailsvc, the timers, the helper) under the environment. `trusted` is what a
 * root process may take paths and programs from: the file's values only when
 * the service user cannot write it (root's, in root's directories).
 */
export function settingsSources(env: Source = process.env, cwd = process.cwd(), layout: Layout = detectLayout()): { configFile: string; fileValues: Record<string, string>; dataDir: string; src: Source; trusted: Source } {
  // The settings file may set MAILSVC_DATA_DIR (installed: /etc/mailsvc/mailsvc.conf);
  // in a checkout the file lives in the data directory, so there only the environment can move it.
  const configFile = resolve(cwd, str(env, 'MAILSVC_CONFIG_FILE') ?? layout.configFile ?? join(resolve(cwd, str(env, 'MAILSVC_DATA_DIR') ?? layout.dataDir), 'mailsvc.conf'));
  const fileValues = readSettingsFile(configFile);
  const dataDir = resolve(cwd, str(env, 'MAILSVC_DATA_DIR') ?? str(fileValues, 'MAILSVC_DATA_DIR') ?? layout.dataDir);
  return { configFile, fileValues, dataDir, src: { ...fileValues, ...env }, trusted: { ...trustedFileValues(configFile, fileValues), ...env } };
}
