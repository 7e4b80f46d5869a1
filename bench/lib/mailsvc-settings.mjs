// The settings every bench copy of mailsvc runs with. Only these keys: nothing
// from the caller's environment or a settings file leaks into the service.
import { loadSettings } from '../../dist/config/settings.js';

/** @param {{ dataDir: string, password: string, logLevel?: string }} o */
export function benchSettings(o) {
  return loadSettings(
    {
      MAILSVC_DATA_DIR: o.dataDir,
      MAILSVC_ADMIN_USERNAME: 'admin',
      MAILSVC_ADMIN_PASSWORD: o.password,
      MAILSVC_MFA_REQUIRED: 'no',
      MAILSVC_LOG_LEVEL: o.logLevel ?? 'warn',
      MAILSVC_API_HOST: '127.0.0.1',
      MAILSVC_API_PORT: '0',
    },
    o.dataDir,
  );
}
