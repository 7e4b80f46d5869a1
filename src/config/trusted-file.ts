import { statSync } from 'node:fs';

/**
 * The settings file's values a root process may take paths from that it
 * writes as root (the backup directory, the manifest key): all of them when
 * this process is not root (it has no more rights than the file's writer),
 * else only when root owns the file and neither its group nor others can
 * write it; none otherwise (the environment alone then).
 */
export function trustedFileValues(file: string, values: Record<string, string>, uid: number | undefined = process.getuid?.()): Record<string, string> {
  if (uid !== 0) return values;
  try {
    const st = statSync(file);
    return st.uid === 0 && (st.mode & 0o022) === 0 ? values : {};
  } catch {
    return {};
  }
}
