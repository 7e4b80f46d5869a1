import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { postfixChecker } from '../../../adapters/config-applier/index.js';
import type { RenderedFile } from '../../../adapters/config-applier/index.js';
import type { PostfixMapName } from '../../routing/index.js';
import { current, database, rootGroupOwner, startCertificate, template } from './common.js';
import type { DaemonPlan, HostOps, HostStep, WiredDaemon, WiringContext } from './types.js';

/** `key = value` pairs of a main.cf fragment (continuation lines joined), comments skipped. */
export function mainCfPairs(text: string): [string, string][] {
  const pairs: [string, string][] = [];
  for (const line of text.split('\n')) {
    if (/^\s*(#|$)/.test(line)) continue;
    const last = pairs.at(-1);
    if (/^\s/.test(line) && last) last[1] = `${last[1]} ${line.trim()}`.trim();
    else {
      const m = /^([A-Za-z0-9_]+)\s*=\s*(.*)$/.exec(line);
      if (m?.[1] !== undefined) pairs.push([m[1], (m[2] ?? '').trim()]);
    }
  }
  return pairs;
}

/** The services of a master.cf fragment: `name/type` with its line and its `-o` parameters. */
export function masterCfServices(text: string): { service: string; line: string; params: string[] }[] {
  const out: { service: string; line: string; params: string[] }[] = [];
  for (const line of text.split('\n')) {
    if (/^\s*(#|$)/.test(line)) continue;
    const opt = /^\s+-o\s+(\S+=.*)$/.exec(line);
    if (opt?.[1] !== undefined) out.at(-1)?.params.push(opt[1].trim());
    else if (!/^\s/.test(line)) {
      const [name, type] = line.trim().split(/\s+/);
      out.push({ service: `${name}/${type}`, line: line.trim(), params: [] });
    }
  }
  return out;
}

const MILTER = 'inet:127.0.0.1:11332';

/** deploy/postfix/<db>/<file>.cf → the name mailsvc's socketmap server gives that table. */
export const SOCKETMAP_NAMES: Record<string, PostfixMapName> = {
  'virtual-domains': 'domains',
  'virtual-mailboxes': 'mailboxes',
  'virtual-alias-mailboxes': 'alias-mailboxes',
  'virtual-aliases': 'aliases',
  'sender-logins': 'sender-logins',
};

/**
 * Postfix: mailsvc's lookup tables for the database in use, main.cf's
 * settings set with `postconf -e` and the submission services with
 * `postconf -M`/`-P` — run on a scratch copy of main.cf and master.cf, whose
 * result then goes through the applier (postfix check, rename, reload) — the
 * policy service on its Unix socket, Rspamd's milter, a certificate, and
 * with SRS postsrsd's canonical maps. main.cf and master.cf are kept once as
 * `*.mailsvc-orig`.
 */
export async function planPostfix(ctx: WiringContext, alsoWired: ReadonlySet<WiredDaemon>): Promise<DaemonPlan> {
  const { paths, settings } = ctx;
  const dir = paths.postfixDir;
  if (!existsSync(join(dir, 'main.cf'))) throw new Error(`no ${join(dir, 'main.cf')} (Postfix installed with "No configuration"): dpkg-reconfigure postfix, then mailsvc install again`);
  const db = database(settings.databaseUrl);
  const owner = await rootGroupOwner(ctx.exec, 'postfix');
  const files: RenderedFile[] = [];
  const notes: string[] = [];

  const policyDir = join(paths.postfixSpool, 'mailsvc');
  const mapsSocket = join(policyDir, 'maps');
  // SQLite: Postfix asks mailsvc (socketmap) rather than opening the file. Its daemons drop every
  // supplementary group (set_ugid), so a group shared with mailsvc cannot give them the database,
  // and they need no more than the answers. PostgreSQL and MariaDB: a read-only role reads the tables.
  const socketmap = db.dialect === 'sqlite';
  const mapsDir = join(dir, 'mailsvc', db.dialect);
  if (!socketmap) {
    for (const name of readdirSync(join(paths.deployDir, 'postfix', db.dialect)).filter((f) => f.endsWith('.cf')).sort()) {
      const path = join(mapsDir, name);
      if (existsSync(path)) continue; // holds the read-only role's password the administrator set: never overwritten
      const text = template(ctx, join('postfix', db.dialect, name)).replace(/^hosts = .*$/m, `hosts = inet:${db.host}:${db.port}`).replace(/^dbname = .*$/m, `dbname = ${db.name}`);
      files.push({ path, content: text, mode: 0o640, ...(owner ? { owner } : {}) });
    }
    notes.push(`the ${db.dialect} lookup tables in ${mapsDir} log in as the read-only role postfix: set its password there (password = CHANGE_ME when first written; deploy/postfix/README.md, Database access)`);
  }

  const tableDir = `${dir}/mailsvc/\${mailsvc_db}/`;
  // proxy: the tables are asked by proxymap(8), which is not chrooted, for every Postfix daemon.
  const table = (value: string): string =>
    socketmap ? value.replace(/proxy:\$\{mailsvc_db\}:\/etc\/postfix\/mailsvc\/\$\{mailsvc_db\}\/([a-z-]+)\.cf/g, (_m, name: string) => `proxy:socketmap:unix:${mapsSocket}:${SOCKETMAP_NAMES[name] ?? name}`) : value.replaceAll('/etc/postfix/mailsvc/${mailsvc_db}/', tableDir);
  const main: [string, string][] = mainCfPairs(template(ctx, 'postfix/main.cf.mailsvc')).filter(([k]) => !socketmap || k !== 'mailsvc_db').map(([k, v]) => [k, table(v)]);
  const set = new Map<string, string>(main);
  if (!socketmap) set.set('mailsvc_db', db.dialect);
  // The policy service on a Unix socket only the group postfix may open, relative to the queue directory (chrooted smtpd too).
  set.set('smtpd_end_of_data_restrictions', 'check_policy_service { unix:mailsvc/policy, timeout=10s, max_idle=60s, default_action=DUNNO }');

  const stage = mkdtempSync(join(tmpdir(), 'mailsvc-postconf-'));
  try {
    for (const f of ['main.cf', 'master.cf']) if (existsSync(join(dir, f))) copyFileSync(join(dir, f), join(stage, f));
    const postconf = async (args: string[]): Promise<string> => {
      const r = await ctx.exec('postconf', ['-c', stage, ...args], { timeoutMs: 30_000 });
      if (r.code !== 0) throw new Error(`postconf ${args[0] ?? ''} exited ${r.code}: ${r.stderr.trim()}`);
      return r.stdout.trim();
    };
    const value = async (key: string): Promise<string> => (await postconf(['-h', key])).trim();
    if (alsoWired.has('rspamd')) {
      // Rspamd's milter (spam filtering, DKIM signing), after any milter already there.
      const milters = await value('smtpd_milters');
      if (!/(127\.0\.0\.1|localhost):11332\b/.test(milters)) set.set('smtpd_milters', milters ? `${milters}, ${MILTER}` : MILTER);
      set.set('non_smtpd_milters', '$smtpd_milters');
      set.set('milter_default_action', 'accept');
    }
    const cert = startCertificate(ctx);
    const before: HostStep[] = [];
    if ((await value('smtpd_tls_cert_file')) === '') {
      set.set('smtpd_tls_cert_file', cert.cert);
      set.set('smtpd_tls_key_file', cert.key);
      before.push(cert.step);
    }
    if (alsoWired.has('postsrsd')) {
      set.set('sender_canonical_maps', 'tcp:127.0.0.1:10001');
      set.set('sender_canonical_classes', 'envelope_sender');
      set.set('recipient_canonical_maps', 'tcp:127.0.0.1:10002');
      set.set('recipient_canonical_classes', 'envelope_recipient,header_recipient');
    }
    // Set every time on the scratch copy: postconf replaces a key or a service in place, so a second run
    // yields the same bytes and the applier finds nothing to do.
    await postconf(['-e', ...[...set].map(([k, v]) => `${k}=${v}`)]);
    // An earlier install's mailsvc_db, unused with socketmap tables (postconf would warn of it); -X of an absent key changes nothing.
    if (socketmap) await postconf(['-X', 'mailsvc_db']);
    for (const s of masterCfServices(template(ctx, 'postfix/master.cf.submission'))) {
      await postconf(['-M', `${s.service}=${s.line}`]);
      if (s.params.length) await postconf(['-P', ...s.params.map((p) => `${s.service}/${p}`)]);
    }
    for (const f of ['main.cf', 'master.cf']) {
      const live = join(dir, f);
      const was = current(live);
      const mode = was === null ? 0o644 : statSync(live).mode & 0o7777;
      files.push({ path: live, content: readFileSync(join(stage, f)), mode });
      if (was !== null && !existsSync(`${live}.mailsvc-orig`)) files.push({ path: `${live}.mailsvc-orig`, content: was, mode });
    }
    return {
      daemon: 'postfix',
      before: [
        ...before,
        ...(socketmap ? [] : [{ what: `${dir}/mailsvc and ${mapsDir} (root:postfix 0750)`, run: async (h: HostOps) => [await h.ensureDir(join(dir, 'mailsvc'), 'root', 'postfix', 0o750), await h.ensureDir(mapsDir, 'root', 'postfix', 0o750)].some(Boolean) }]),
        { what: `${policyDir} for the policy ${socketmap ? 'and lookup-table sockets' : 'socket'} (${settings.serviceUser}:postfix 0750)`, run: (h) => h.ensureDir(policyDir, settings.serviceUser, 'postfix', 0o750) },
        { what: `group: ${settings.serviceUser} in postfix (the sockets' group)`, run: async (h) => (await h.addToGroups(settings.serviceUser, ['postfix'])).length > 0 },
        ...(socketmap ? [{ what: `${db.path} group-writable (0660: Dovecot's auth worker reads it in WAL mode)`, run: (h: HostOps) => h.ensureMode(db.path, 0o660) }] : []),
      ],
      files,
      checker: postfixChecker(dir, ctx.exec),
      after: [],
      settings: {
        MAILSVC_POLICY_LISTEN: `unix:${join(policyDir, 'policy')}`,
        MAILSVC_POLICY_SOCKET_GROUP: 'postfix',
        ...(socketmap ? { MAILSVC_MAPS_LISTEN: `unix:${mapsSocket}`, MAILSVC_MAPS_SOCKET_GROUP: 'postfix' } : {}),
      },
      notes,
    };
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}
