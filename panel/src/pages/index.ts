import type { FunctionComponent } from 'preact';
import { Dashboard } from './dashboard';
import { Security } from './security';
import { Domains } from './domains';
import { Accounts, AppPasswords } from './accounts';
import { Aliases } from './aliases';
import { Queue } from './queue';
import { Bans } from './bans';
import { Firewall } from './firewall';
import { Limits } from './limits';
import { General } from './general';
import { Audit } from './audit';
import { Backups } from './backups';
import { Dns } from './dns';
import { Certs } from './certs';
import { Stats } from './stats';

/** The sidebar's groups, as an administrator thinks of the work; the dashboard stands above them. */
export const GROUPS = ['Mail', 'Delivery', 'Security', 'Host'] as const;
export type Group = (typeof GROUPS)[number];

/**
 * Every page, in menu order within its group: the one place a page is added
 * (one entry; the sidebar, the small-screen menu and the search read this).
 * `nav` is the menu's label when it differs from the page's heading; `keywords`
 * are further words the search finds the page by.
 */
export const PAGES: { id: string; title: string; nav?: string; group: Group | null; keywords?: string; component: FunctionComponent }[] = [
  { id: 'dashboard', title: 'Dashboard', group: null, keywords: 'status health overview', component: Dashboard },
  { id: 'domains', title: 'Domains', group: 'Mail', component: Domains },
  { id: 'accounts', title: 'Accounts', group: 'Mail', keywords: 'mailbox user quota', component: Accounts },
  { id: 'aliases', title: 'Aliases', group: 'Mail', keywords: 'forward redirect', component: Aliases },
  { id: 'app-passwords', title: 'App passwords', group: 'Mail', component: AppPasswords },
  { id: 'queue', title: 'Queue', group: 'Delivery', keywords: 'deferred hold release postfix', component: Queue },
  { id: 'dns', title: 'DNS', nav: 'DNS and deliverability', group: 'Delivery', keywords: 'dkim spf dmarc mx records cloudflare', component: Dns },
  { id: 'stats', title: 'Statistics', group: 'Delivery', keywords: 'traffic messages chart', component: Stats },
  { id: 'security', title: 'Security', nav: 'Sign-in and factors', group: 'Security', keywords: 'mfa totp sms second factor', component: Security },
  { id: 'bans', title: 'Bans', group: 'Security', keywords: 'fail2ban block ip', component: Bans },
  { id: 'firewall', title: 'Firewall', group: 'Security', keywords: 'nftables ports rules', component: Firewall },
  { id: 'audit', title: 'Audit log', group: 'Security', keywords: 'history changes', component: Audit },
  { id: 'backups', title: 'Backups', group: 'Host', keywords: 'restore verify schedule', component: Backups },
  { id: 'certs', title: 'Certificates', group: 'Host', keywords: 'tls acme letsencrypt ssl certificate renew', component: Certs },
  { id: 'limits', title: 'Settings → Limits', nav: 'Limits', group: 'Host', keywords: 'rate quota size', component: Limits },
  { id: 'general', title: 'Settings → General', nav: 'Updates', group: 'Host', keywords: 'update channel release version', component: General },
];
