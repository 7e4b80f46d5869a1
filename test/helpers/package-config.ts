import { cpSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Dovecot's configuration as Debian's packages install it, for tests that
 * start from the package's defaults. Debian keeps the pristine files in
 * /usr/share/dovecot (dovecot.conf, conf.d/, the *.conf.ext files) and ucf
 * puts copies into /etc/dovecot, where another program or the administrator
 * may then add or change files (a `99-…` drop-in of another tool in conf.d).
 * The copy is made from /usr/share/dovecot, so it is the package's whatever the
 * machine's own /etc/dovecot holds.
 */
const PRISTINE = '/usr/share/dovecot';

/** Why the package's own configuration is not here (dovecot-core missing), or null. */
export function debianDovecotConfigUnavailable(): string | null {
  return existsSync(join(PRISTINE, 'dovecot.conf')) && existsSync(join(PRISTINE, 'conf.d')) ? null : `no ${PRISTINE}/dovecot.conf and conf.d (Debian package dovecot-core)`;
}

/** Writes dovecot.conf, conf.d/ and the *.conf.ext files of the package into dest. */
export function copyDebianDovecotConfig(dest: string): void {
  mkdirSync(dest, { recursive: true });
  cpSync(join(PRISTINE, 'dovecot.conf'), join(dest, 'dovecot.conf'));
  cpSync(join(PRISTINE, 'conf.d'), join(dest, 'conf.d'), { recursive: true });
  for (const f of readdirSync(PRISTINE)) if (f.endsWith('.conf.ext')) cpSync(join(PRISTINE, f), join(dest, f));
}
