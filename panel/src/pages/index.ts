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

/** The pages, in menu order. */
export const PAGES: { id: string; title: string; component: FunctionComponent }[] = [
  { id: 'dashboard', title: 'Dashboard', component: Dashboard },
  { id: 'security', title: 'Security', component: Security },
  { id: 'domains', title: 'Domains', component: Domains },
  { id: 'accounts', title: 'Accounts', component: Accounts },
  { id: 'aliases', title: 'Aliases', component: Aliases },
  { id: 'app-passwords', title: 'App passwords', component: AppPasswords },
  { id: 'queue', title: 'Queue', component: Queue },
  { id: 'bans', title: 'Bans', component: Bans },
  { id: 'firewall', title: 'Firewall', component: Firewall },
  { id: 'backups', title: 'Backups', component: Backups },
  { id: 'dns', title: 'DNS', component: Dns },
  { id: 'certs', title: 'Certificates', component: Certs },
  { id: 'stats', title: 'Statistics', component: Stats },
  { id: 'general', title: 'Settings → General', component: General },
  { id: 'limits', title: 'Settings → Limits', component: Limits },
  { id: 'audit', title: 'Audit log', component: Audit },
];
