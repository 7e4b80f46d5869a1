import { randomBytes } from 'node:crypto';
import { chmod, chown, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { ConfigFileHost, FileState } from './types.js';

/** The file operations of an apply, done in this process (the caller is root, or owns the files). */
export class LocalFileHost implements ConfigFileHost {
  async read(path: string): Promise<FileState | null> {
    try {
      const st = await stat(path);
      if (!st.isFile()) throw new Error(`${path} is not a regular file`);
      return { content: await readFile(path), mode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async writeTemp(path: string, content: Buffer, mode: number, owner?: { uid: number; gid: number }): Promise<string> {
    // A dot name the daemons' include globs (*.conf, *.local, *.cf) do not pick up.
    const temp = join(dirname(path), `.${basename(path)}.mailsvc-${randomBytes(6).toString('hex')}`);
    const fh = await open(temp, 'wx', 0o600);
    try {
      await fh.writeFile(content);
      await fh.sync();
    } finally {
      await fh.close();
    }
    try {
      // chmod after the write: the umask must not trim the mode the render asked for.
      if (owner && process.getuid?.() === 0) await chown(temp, owner.uid, owner.gid);
      await chmod(temp, mode);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    return temp;
  }

  rename(from: string, to: string): Promise<void> {
    return rename(from, to);
  }

  remove(path: string): Promise<void> {
    return rm(path, { force: true });
  }
}
