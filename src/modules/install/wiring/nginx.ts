import { dirname, join } from 'node:path';
import { nginxChecker } from '../../../adapters/config-applier/index.js';
import type { RenderedFile } from '../../../adapters/config-applier/index.js';
import { current, startCertificate, template } from './common.js';
import type { DaemonPlan, HostStep, WiringContext } from './types.js';

/** The ACME webroot the site serves when MAILSVC_ACME_WEBROOT is not set. */
export const DEFAULT_WEBROOT = '/var/www/mailsvc-acme';

/** deploy/nginx/mailsvc.conf with this host's name (any name without one) and ACME webroot. */
export function renderSite(site: string, serverName: string | undefined, webroot: string): string {
  return site.replace(/^(\s*server_name) mail\.example\.org;/gm, `$1 ${serverName ?? '_'};`).replace('location /.well-known/acme-challenge/ { root /var/www/html; }', `location /.well-known/acme-challenge/ { root ${webroot}; }`);
}

/**
 * nginx: mailsvc's site (sites-enabled/mailsvc.conf), the TLS snippet it
 * includes — written once, with a snakeoil or self-signed certificate, and
 * left to `mailsvc certs issue` / `tls deploy` afterwards — and the ACME
 * webroot the site serves /.well-known/acme-challenge/ from.
 */
export function planNginx(ctx: WiringContext): DaemonPlan {
  const etc = dirname(ctx.paths.nginxConf);
  const webroot = ctx.settings.acmeWebroot ?? DEFAULT_WEBROOT;
  const files: RenderedFile[] = [{ path: join(etc, 'sites-enabled', 'mailsvc.conf'), content: renderSite(template(ctx, 'nginx/mailsvc.conf'), ctx.settings.serverName, webroot), mode: 0o644 }];
  const snippet = join(etc, 'snippets', 'mailsvc-tls.conf');
  const before: HostStep[] = [];
  if (current(snippet) === null) {
    const cert = startCertificate(ctx);
    before.push(cert.step);
    files.push({
      path: snippet,
      content: ['# mailsvc (written once by mailsvc install): a certificate to start with.', '# mailsvc certs issue / tls deploy replace these two lines with the real one.', `ssl_certificate ${cert.cert};`, `ssl_certificate_key ${cert.key};`, ''].join('\n'),
      mode: 0o644,
    });
  }
  const challenges = join(webroot, '.well-known', 'acme-challenge');
  before.push({ what: `the ACME webroot ${challenges} (${ctx.settings.serviceUser}, 0755: mailsvc writes the answers, nginx serves them)`, run: async (h) => [await h.ensureDir(webroot, 'root', 'root', 0o755), await h.ensureDir(join(webroot, '.well-known'), 'root', 'root', 0o755), await h.ensureDir(challenges, ctx.settings.serviceUser, ctx.settings.serviceUser, 0o755)].some(Boolean) });
  return {
    daemon: 'nginx',
    before,
    files,
    checker: nginxChecker(ctx.paths.nginxConf, ctx.exec),
    after: [],
    // nginx on this host proxies to the API: its X-Forwarded-For names the client (per-client limits, lockouts, the audit log).
    settings: {
      ...(ctx.settings.acmeWebroot === undefined ? { MAILSVC_ACME_WEBROOT: webroot } : {}),
      ...(ctx.settings.trustedProxies.length === 0 ? { MAILSVC_TRUSTED_PROXIES: '127.0.0.1,::1' } : {}),
    },
    notes: ctx.settings.serverName === undefined ? ['the site answers any name (server_name _): set MAILSVC_MAIL_HOSTNAME and run mailsvc install again to name it'] : [],
  };
}
