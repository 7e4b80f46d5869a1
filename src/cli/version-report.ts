import { dirname, join } from 'node:path';
import { packageRoot } from '../config/layout.js';
import { SERVICE_VERSION } from '../shared/version.js';

export type VersionReport = { version: string; node: string; runtime: 'bundled' | 'host'; node_path: string };

/**
 * What `mailsvc --version --json` prints (null for any other arguments): the version, the Node.js running it
 * and whether that is the release's own runtime (`<release>/runtime/bin/node`, what bin/mailsvc starts) or
 * the host's (a checkout, or the bundle started with another node).
 */
export function versionReport(args: string[], execPath: string = process.execPath): VersionReport | null {
  const asked = args.length === 2 && args.includes('--json') && (args.includes('--version') || args.includes('-V'));
  if (!asked) return null;
  const bundled = dirname(execPath) === join(packageRoot(), 'runtime', 'bin');
  return { version: SERVICE_VERSION, node: process.version, runtime: bundled ? 'bundled' : 'host', node_path: execPath };
}
