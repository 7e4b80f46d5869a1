import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import pino from 'pino';
import { loadModuleList } from '../app/module-list.js';
import { openService } from '../app/service.js';
import { buildProgram } from '../cli/program.js';
import { loadSettings } from '../config/settings.js';
import { buildApp } from '../http/app.js';
import type { RouteEntry } from '../http/route-catalog.js';
import type { AnyModuleManifest } from '../modules/module-types.js';

/** What the generated tables are made of: the routes, the commands and the modules that add them. */
export type Catalog = {
  manifests: readonly AnyModuleManifest[];
  /** Every route, in the order the service registers them. */
  routes: RouteEntry[];
  program: Command;
  /** The module that added each command (the commands of cli/ itself have none). */
  owners: Map<Command, AnyModuleManifest>;
};

/**
 * Builds the service as `mailsvc serve` does, on a throw-away SQLite database
 * in a temp directory, to list its routes, and the `mailsvc` program to list
 * its commands. Nothing of this machine's settings is read.
 */
export async function collectCatalog(root: string): Promise<Catalog> {
  const manifests = await loadModuleList();
  const owners = new Map<Command, AnyModuleManifest>();
  const program = await buildProgram({ owners });
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-docs-'));
  try {
    const settings = loadSettings(
      { MAILSVC_DATA_DIR: dir, MAILSVC_CONFIG_FILE: join(dir, 'none.conf'), MAILSVC_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'), MAILSVC_ADMIN_PASSWORD: 'docs only' },
      root,
    );
    const modules = await openService(settings, { log: pino({ level: 'silent' }) });
    const routes: RouteEntry[] = [];
    try {
      const app = await buildApp(modules, { routes });
      await app.close();
    } finally {
      await modules.close();
    }
    return { manifests, routes, program, owners };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
