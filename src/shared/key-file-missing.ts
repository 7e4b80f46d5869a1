/**
 * A host command found no key file (and MAILSVC_SECRET_KEY is not set). Here,
 * not in secret-key-file.ts, so that the CLI's error printer can recognise it
 * without loading node:crypto and the secret box at every start.
 */
export class KeyFileMissing extends Error {
  constructor(readonly path: string) {
    super(`no key file at ${path}: start the service once (it makes one), or set MAILSVC_SECRET_KEY`);
  }
}
