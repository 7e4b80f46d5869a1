import { existsSync } from 'node:fs';
import { createConnection } from 'node:net';
import { AppError } from '../shared/errors.js';

/**
 * A listener that cannot bind stops the start with one line naming the
 * setting to change; the listeners already opened are closed first, so a
 * second instance leaves nothing behind.
 */
export async function bindOrExplain<T>(setting: string, where: string, bind: () => Promise<T>): Promise<T> {
  try {
    return await bind();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new AppError('unavailable', `${setting} (${where}) is already in use, by another mailsvc or another program: stop it or set ${setting} to a free address`);
    if (code === 'EACCES') throw new AppError('unavailable', `${setting} (${where}) cannot be opened by this user (permission denied): set ${setting} to another address`);
    throw err;
  }
}

/** True when something answers on the Unix socket: a running service, whose socket must not be taken over. */
export function socketInUse(path: string): Promise<boolean> {
  if (!existsSync(path)) return Promise.resolve(false);
  return new Promise((resolve) => {
    const c = createConnection(path);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}
