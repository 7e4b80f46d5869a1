export { applyConfig } from './apply.js';
export { LocalFileHost } from './local-file-host.js';
export { commandReloader } from './reloader.js';
export { dovecotChecker, fail2banChecker, nftablesChecker, nginxChecker, postfixChecker, rspamdChecker, systemdChecker } from './checkers.js';
export type { RunFn } from './checkers.js';
export type * from './types.js';
