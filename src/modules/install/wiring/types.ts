import type { ConfigChecker, ConfigFileHost, DaemonReloader, RenderedFile, RunFn } from '../../../adapters/config-applier/index.js';

/** The daemons `mailsvc install` wires, by the name `--no-wire` takes. */
export const WIRED_DAEMONS = ['postfix', 'dovecot', 'rspamd', 'nginx', 'fail2ban', 'postsrsd', 'nftables'] as const;
export type WiredDaemon = (typeof WIRED_DAEMONS)[number];

/** Where each daemon keeps its files (Debian's defaults; tests give temp copies). */
export type WiringPaths = {
  postfixDir: string;
  /** Postfix's queue directory: the policy socket's directory goes inside it. */
  postfixSpool: string;
  dovecotConf: string;
  rspamdLocalDir: string;
  nginxConf: string;
  fail2banDir: string;
  postsrsdDefaults: string;
  nftablesConf: string;
  /** The release's deploy/ directory (the daemon templates). */
  deployDir: string;
  /** mailsvc's settings file (/etc/mailsvc/mailsvc.conf). */
  settingsFile: string;
  /** Dovecot's mail storage, owned by vmail. */
  vmailDir: string;
  /** Where the self-signed certificate goes when Debian's snakeoil one cannot be made. */
  tlsDir: string;
  /** Debian's snakeoil pair (package ssl-cert), the first choice of a certificate to start with. */
  snakeoil: { cert: string; key: string };
};

/** What the wiring reads from mailsvc's settings. */
export type WiringSettings = {
  /** `sqlite:///var/lib/mailsvc/mailsvc.db`, `postgres://…`, `mysql://…`. */
  databaseUrl: string;
  authHookSocket: string;
  authLog: string;
  enableSrs: boolean;
  srsDomain: string | undefined;
  enableUserPortal: boolean;
  /** The name nginx's site answers to (MAILSVC_MAIL_HOSTNAME); unset: any name. */
  serverName: string | undefined;
  /** MAILSVC_ACME_WEBROOT when set; otherwise the wiring sets it to the webroot the nginx site serves. */
  acmeWebroot: string | undefined;
  /** MAILSVC_TRUSTED_PROXIES as set; empty: the wiring trusts the nginx it puts in front (127.0.0.1, ::1). */
  trustedProxies: string[];
  serviceUser: string;
};

/** Root's side effects outside the daemons' files (users, groups, directories, units). Tests record them. */
export interface HostOps {
  /** Adds `user` to `groups` it is not yet in; returns the groups it was added to. */
  addToGroups(user: string, groups: readonly string[]): Promise<string[]>;
  /** Creates a system user (and its group) unless it exists; true when made. */
  ensureSystemUser(name: string, home: string): Promise<boolean>;
  /** Creates a directory (and parents) with this owner and mode unless it is already so; true when anything changed. */
  ensureDir(path: string, owner: string, group: string, mode: number): Promise<boolean>;
  /** Creates an empty file with this owner and mode unless it exists; true when made. */
  ensureFile(path: string, owner: string, group: string, mode: number): Promise<boolean>;
  /** Sets a file's mode (when the file exists and differs); true when changed. */
  ensureMode(path: string, mode: number): Promise<boolean>;
  /** `systemctl enable --now <unit>` unless enabled and active; true when changed. */
  enableUnit(unit: string): Promise<boolean>;
  /** Makes the certificate pair unless both files exist (`snakeoil`: make-ssl-cert, else openssl self-signed); true when made. */
  ensureCertificate(cert: string, key: string, snakeoil: boolean): Promise<boolean>;
  /** Whether a group exists. */
  groupExists(name: string): Promise<boolean>;
}

/** A step outside the applier, with the question that makes it idempotent. */
export type HostStep = { what: string; run(host: HostOps): Promise<boolean> };

/** One daemon's wiring, computed without changing anything. */
export type DaemonPlan = {
  daemon: WiredDaemon;
  /** Before the files: users, directories the files go into. */
  before: HostStep[];
  files: RenderedFile[];
  checker: ConfigChecker;
  /** After the files are in place: units enabled, modes. */
  after: HostStep[];
  /** Keys for mailsvc's settings file. */
  settings: Record<string, string>;
  /** What the administrator should know (a choice made, a part left out). */
  notes: string[];
};

export type WiringContext = {
  paths: WiringPaths;
  settings: WiringSettings;
  exec: RunFn;
};

export type DaemonOutcome = {
  daemon: WiredDaemon;
  status: 'wired' | 'already wired' | 'would wire' | 'not installed' | 'left alone' | 'failed';
  /** Files created or changed, host steps taken (or, with --dry-run, that would be). */
  changes: string[];
  /** With --dry-run: the change of each file, as a unified diff. */
  diffs?: { path: string; diff: string }[];
  notes: string[];
  /** Why it failed (status failed): what the checker or the reload said; the files are back as they were. */
  detail?: string;
};

export type WiringReport = { dryRun: boolean; daemons: DaemonOutcome[] };

export type WiringInput = {
  ctx: WiringContext;
  dryRun: boolean;
  noWire: readonly WiredDaemon[];
  /** Which daemons are installed; default: by their programs and configuration. */
  installed?: (d: WiredDaemon) => Promise<boolean>;
  host: HostOps;
  files: ConfigFileHost;
  reloader: DaemonReloader;
  /** Writes one key into mailsvc's settings file (the settings-file writer). */
  writeSetting(key: string, value: string): void;
  readSettings(): Record<string, string>;
};
