import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { dovecotChecker } from '../../../adapters/config-applier/index.js';
import type { RenderedFile } from '../../../adapters/config-applier/index.js';
import { current, database, rootGroupOwner, template } from './common.js';
import type { DaemonPlan, HostOps, WiringContext } from './types.js';

/** The socket the packaged 10-mailsvc-auth.conf names (the unit's RuntimeDirectory). */
const PACKAGED_HOOK = '/run/mailsvc/auth-hook.sock';
/** Pigeonhole's Sieve plugin (Debian dovecot-sieve): the portal's file needs it. */
export const SIEVE_PLUGIN = '/usr/lib/dovecot/modules/lib90_sieve_plugin.so';

/** 10-auth.conf with the stock passdb/userdb include commented out (10-mailsvc-auth.conf brings its own). */
export const withoutSystemAuth = (text: string): string => text.replace(/^!include auth-system\.conf\.ext/m, '#!include auth-system.conf.ext');

/**
 * Dovecot: the Lua passdb asking mailsvc's hook, the SQL fallback and the
 * prefetch userdb (10-mailsvc-auth.conf), the SASL and LMTP sockets Postfix
 * uses, the auth workers in mailsvc's group, the listeners, Sieve and quota
 * for the portal (when dovecot-sieve is installed), the vmail user and its
 * storage. 10-auth.conf is kept once as 10-auth.conf.mailsvc-orig.
 */
export async function planDovecot(ctx: WiringContext): Promise<DaemonPlan> {
  const { paths, settings } = ctx;
  const etc = dirname(paths.dovecotConf);
  const confd = join(etc, 'conf.d');
  const db = database(settings.databaseUrl);
  const files: RenderedFile[] = [];
  const notes: string[] = [];
  const dovecotGroup = await rootGroupOwner(ctx.exec, 'dovecot');

  files.push({ path: join(etc, 'mailsvc-auth.lua'), content: template(ctx, 'dovecot/mailsvc-auth.lua'), mode: 0o644 });
  const sqlPath = join(etc, 'dovecot-sql.conf.ext');
  const sqlNow = current(sqlPath);
  if (db.dialect === 'sqlite') {
    files.push({ path: sqlPath, content: template(ctx, 'dovecot/dovecot-sql.sqlite.conf.ext').replace(/^connect = .*$/m, `connect = ${db.path}`), mode: 0o640, ...(dovecotGroup ? { owner: dovecotGroup } : {}) });
  } else if (!sqlNow || !new RegExp(`^driver = ${db.dialect}`, 'm').test(sqlNow)) {
    // Written once: the administrator puts the read-only role's password into connect = afterwards.
    const text = template(ctx, `dovecot/dovecot-sql.${db.dialect}.conf.ext`).replace(/\bhost=\S+/, `host=${db.host}`).replace(/\bport=\d+/, `port=${db.port}`).replace(/\bdbname=\S+/, `dbname=${db.name}`);
    files.push({ path: sqlPath, content: text, mode: 0o640, ...(dovecotGroup ? { owner: dovecotGroup } : {}) });
    notes.push(`${sqlPath}: set the database role's password in connect = (deploy/dovecot/README.md)`);
  }
  const hook = settings.authHookSocket;
  files.push({ path: join(confd, '10-mailsvc-auth.conf'), content: template(ctx, 'dovecot/conf.d/10-mailsvc-auth.conf').replaceAll(PACKAGED_HOOK, hook), mode: 0o644 });
  files.push({ path: join(confd, '11-mailsvc-postfix.conf'), content: template(ctx, 'dovecot/conf.d/11-mailsvc-postfix.conf').replaceAll('/var/spool/postfix/', `${paths.postfixSpool}/`), mode: 0o644 });
  files.push({
    path: join(confd, '12-mailsvc-groups.conf'),
    content: [
      '# mailsvc (written by mailsvc install): the auth workers open mailsvc\'s hook socket',
      `# (in /run/mailsvc, group ${settings.serviceUser}) and, with SQLite, its database: they need that group.`,
      'service auth-worker {',
      `  extra_groups = ${settings.serviceUser}`,
      '}',
      '',
    ].join('\n'),
    mode: 0o644,
  });
  files.push({ path: join(confd, '13-mailsvc-listeners.conf'), content: template(ctx, 'dovecot/conf.d/13-mailsvc-listeners.conf'), mode: 0o644 });
  if (existsSync(SIEVE_PLUGIN)) files.push({ path: join(confd, '12-mailsvc-portal.conf'), content: template(ctx, 'dovecot/conf.d/12-mailsvc-portal.conf'), mode: 0o644 });
  else notes.push('Sieve and quota (the portal\'s forwarding, auto-reply and usage) are left out: install dovecot-sieve and dovecot-managesieved, then run mailsvc install again');

  const authConf = join(confd, '10-auth.conf');
  const authNow = current(authConf);
  if (authNow !== null) {
    files.push({ path: authConf, content: withoutSystemAuth(authNow), mode: 0o644 });
    if (!existsSync(`${authConf}.mailsvc-orig`) && withoutSystemAuth(authNow) !== authNow) files.push({ path: `${authConf}.mailsvc-orig`, content: authNow, mode: 0o644 });
  }

  return {
    daemon: 'dovecot',
    before: [
      { what: `the mail owner vmail (system user, home ${paths.vmailDir})`, run: (h) => h.ensureSystemUser('vmail', paths.vmailDir) },
      { what: `${paths.vmailDir} (vmail:vmail 0750)`, run: (h) => h.ensureDir(paths.vmailDir, 'vmail', 'vmail', 0o750) },
      { what: `groups: ${settings.serviceUser} in dovecot (the hook socket's group)`, run: async (h) => (await h.addToGroups(settings.serviceUser, ['dovecot'])).length > 0 },
      ...(db.dialect === 'sqlite' ? [{ what: `${db.path} group-writable (0660)`, run: (h: HostOps) => h.ensureMode(db.path, 0o660) }] : []),
    ],
    files,
    checker: dovecotChecker(paths.dovecotConf, ctx.exec),
    after: [],
    settings: { MAILSVC_MAIL_AUTH_SOCKET_GROUP: 'dovecot' },
    notes,
  };
}
