/** One file a render step produced: where it goes, what it holds, its permission bits. */
export type RenderedFile = { path: string; content: string | Buffer; mode: number; /** The owner to give it (a restore puts back the recorded one); default: the current file's, else the caller's. */ owner?: { uid: number; gid: number } };

/** What a file looked like on disk before an apply (null: it did not exist). */
export type FileState = { content: Buffer; mode: number; uid: number; gid: number };

/**
 * The file operations of an apply. In-process (`LocalFileHost`) when the
 * caller is root; the privileged helper provides the same operations to an
 * unprivileged service.
 */
export interface ConfigFileHost {
  read(path: string): Promise<FileState | null>;
  /** Writes a new temp file in the same directory as `path` (so a rename is atomic) and returns its path. */
  writeTemp(path: string, content: Buffer, mode: number, owner?: { uid: number; gid: number }): Promise<string>;
  rename(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
}

/** Tells a daemon to read its files again; throws when the daemon refuses. */
export interface DaemonReloader {
  reload(daemon: string): Promise<void>;
}

export type CheckOutcome = { ok: true } | { ok: false; detail: string };

/**
 * A daemon's own configuration checker. It gets the NEW content of every file
 * of its daemon and must judge it before the daemon can load it: checkers
 * check a staged copy, never the live location.
 */
export interface ConfigChecker {
  readonly name: string;
  check(files: readonly { path: string; content: Buffer }[]): Promise<CheckOutcome>;
}

/** The files of one daemon, its checker, and whether to reload it after a change. */
export type ApplyUnit = { daemon: string; files: readonly RenderedFile[]; checker: ConfigChecker; reload: boolean };

export type ApplySuccess = {
  ok: true;
  /** Existing files whose content or mode changed. */
  changed: string[];
  /** Files that did not exist before. */
  created: string[];
  unchanged: string[];
  /** Daemons reloaded, in order; empty when nothing changed. */
  reloaded: string[];
};

export type ApplyFailure = {
  ok: false;
  /** `write`: a temp file or a rename failed; `check`: a checker refused; `reload`: a reload failed. */
  stage: 'write' | 'check' | 'reload';
  daemon: string;
  detail: string;
  /** Files put back as they were (content and mode; created files removed). */
  restored: string[];
  /** Daemons reloaded again after the restore, so they run on the old files. */
  reloadedAfterRestore: string[];
  /** Anything that went wrong while restoring (empty when every file is back). */
  restoreErrors: string[];
};

export type ApplyResult = ApplySuccess | ApplyFailure;

/** A render: a pure function from settings to the files a daemon reads (no I/O, same input → same files). */
export type Render<I> = (input: I) => RenderedFile[];
