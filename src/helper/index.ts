// The privileged helper's public surface (docs/helper.md). Callers take a
// HelperClient; only `mailsvc helper serve` starts the server.
export { ACTIONS, DAEMONS } from './actions.js';
export type { ActionSpec, Command, Daemon, HelperConfig, Param } from './actions.js';
export { HelperError } from '../adapters/helper-client.js';
export type { HelperClient, HelperErrorKind, HelperResult } from '../adapters/helper-client.js';
export { DirectHelperClient, HelperRunner } from './runner.js';
export { startHelperServer } from './server.js';
export type { HelperListen, HelperServerOptions } from './server.js';
export { SocketHelperClient, createHelperClient } from './socket-client.js';
