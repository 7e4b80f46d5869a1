import pino from 'pino';
import { loadHelperProcessSettings, loadSettings } from '../../config/settings.js';
import { SettingsError } from '../../config/settings-error.js';
import { ACTIONS, HelperRunner, createHelperClient, startHelperServer } from '../../helper/index.js';
import type { HelperListen } from '../../helper/index.js';
import { output } from '../output.js';

/** systemd socket activation (sd_listen_fds): the first passed socket is fd 3. */
function inheritedSocket(): number | null {
  const { LISTEN_FDS, LISTEN_PID } = process.env;
  if (!LISTEN_FDS || Number(LISTEN_FDS) < 1) return null;
  if (LISTEN_PID !== undefined && LISTEN_PID !== String(process.pid)) return null;
  return 3;
}

/** `mailsvc helper serve`: loaded only when it runs. */
export async function serveHelper(): Promise<void> {
  // The environment over the settings file, the file's values only when the service user cannot write it (root's, as installed).
  const { helper: settings, logLevel: level } = loadHelperProcessSettings(process.env);
  const log = pino({ level, base: { service: 'mailsvc-helper' } });
  const fd = inheritedSocket();
  let listen: HelperListen;
  if (fd !== null) listen = { fd };
  else if (settings.endpoint.mode === 'unix') listen = { path: settings.endpoint.path, group: settings.socketGroup };
  else throw new SettingsError('MAILSVC_HELPER', 'is direct: there is no socket to serve (set unix:/run/mailsvc/helper.sock)');
  // The socket is created owner-only and opened to its group by chmod 0660 once it exists.
  process.umask(0o077);
  if (process.getuid?.() !== 0) log.warn('mailsvc helper serve is not running as root: its actions will fail');
  const { close } = await startHelperServer(listen, new HelperRunner(settings, log), log, { serviceUnit: settings.serviceUnit });
  log.info({ socket: 'fd' in listen ? 'inherited (fd 3)' : listen.path, actions: [...ACTIONS.keys()] }, 'mailsvc-helper listening');
  const stop = (): void => void close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** `mailsvc helper run <action> [args…]`. */
export async function runHelperAction(action: string, args: string[], opts: { json?: boolean }): Promise<void> {
  const settings = loadSettings();
  // As other commands: log lines on stderr, below warn only when MAILSVC_LOG_LEVEL asks for them.
  const log = pino({ level: process.env.MAILSVC_LOG_LEVEL ? settings.logLevel : 'warn' }, process.stderr);
  const r = await createHelperClient(settings.helper, log).run(action, args);
  output(opts.json, r, () => [r.stdout.trimEnd(), r.stderr.trimEnd(), `exit ${r.code}`].filter(Boolean).join('\n'));
}
