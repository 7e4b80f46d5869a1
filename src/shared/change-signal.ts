import { existsSync, watch, writeFileSync } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { join } from 'node:path';

/**
 * Tells a running service that another process on the host (a `mailsvc`
 * command) changed state it caches: the command writes the file, the service
 * watches it (inotify) and drops its caches.
 */
export class ChangeSignal {
  private watcher: FSWatcher | null = null;
  readonly path: string;

  constructor(dataDir: string) {
    this.path = join(dataDir, 'state.changed');
  }

  notify(): void {
    writeFileSync(this.path, `${Date.now()}\n`, { mode: 0o600 });
  }

  watch(onChange: () => void): void {
    if (!existsSync(this.path)) this.notify();
    this.watcher = watch(this.path, { persistent: false }, () => onChange());
    this.watcher.on('error', () => undefined);
  }

  close(): void {
    this.watcher?.close();
    this.watcher = null;
  }
}
