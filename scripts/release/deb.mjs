// mailsvc_<version>-1_amd64.deb from a staged release (docs/install.md, "The Debian package").
//
// The package holds the release in /usr/lib/mailsvc (lintian forbids /opt in a package); its postinst
// runs `/usr/lib/mailsvc/bin/mailsvc install`, which copies the release into
// /opt/mailsvc/releases/<version> and switches `current` when it is newer: the layout the signed update
// channel uses, so apt and the update channel agree on which release is current.
import { chmodSync, cpSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { join, relative } from 'node:path';

export const DEB_MAINTAINER = 'mailsvc maintainers <maintainers@mailsvc.org>';

/** What mailsvc cannot work without (its own node needs libc6 and libstdc++6; install needs useradd, systemd). */
export const DEPENDS = ['libc6 (>= 2.28)', 'libstdc++6 (>= 10)', 'libgcc-s1', 'systemd', 'passwd', 'ca-certificates'];
/** The daemons it manages, and what they need to work with it. */
export const RECOMMENDS = ['postfix', 'postfix-sqlite', 'dovecot-imapd', 'dovecot-lmtpd', 'dovecot-sieve', 'dovecot-auth-lua', 'dovecot-sqlite', 'lua-socket', 'rspamd', 'nginx', 'fail2ban', 'python3-systemd', 'nftables', 'postsrsd', 'ssl-cert'];
export const SUGGESTS = ['redis-server', 'rclone'];

/** A semantic version as a Debian one: a pre-release sorts before its release (1.2.0~rc.1 < 1.2.0); revision -1. */
export const debianVersion = (v) => `${v.replace('-', '~')}-1`;
export const debFileName = (v) => `mailsvc_${debianVersion(v)}_amd64.deb`;

const KEPT = [
  ['/var/lib/mailsvc', 'the database and keys'],
  ['/etc/mailsvc', 'the settings'],
  ['/var/backups/mailsvc', 'the backups'],
  ['/var/log/mailsvc', 'the logs'],
];

/** The daemons `mailsvc install` wires, each with the packages that set it up (their postinst writes its configuration). */
export const WIRED_PACKAGES = [
  ['postfix', 'postfix', 'postfix-sqlite'],
  ['dovecot', 'dovecot-core', 'dovecot-imapd', 'dovecot-lmtpd', 'dovecot-sieve', 'dovecot-auth-lua', 'dovecot-sqlite'],
  ['rspamd', 'rspamd'],
  ['nginx', 'nginx', 'nginx-common'],
  ['fail2ban', 'fail2ban', 'python3-systemd'],
  ['postsrsd', 'postsrsd'],
  ['nftables', 'nftables'],
];
/** The trigger the postinst activates for itself when apt is still setting up a daemon it wires. */
export const WIRE_TRIGGER = 'mailsvc-wire';

const POSTINST = `#!/bin/sh
# mailsvc install: copies this release into /opt/mailsvc/releases/<version>, switches current to it when it is
# newer than the current one (never backwards), renders the units, runs the migrations, wires the mail daemons,
# (re)starts the service.
#
# apt installs the Recommends (the daemons) in the same run and may configure mailsvc first, before their own
# postinst wrote their configuration. A daemon whose package is not configured yet is left alone now
# (--no-wire), and the ${WIRE_TRIGGER} trigger runs this script again ("triggered") once apt has configured
# everything: then those daemons are wired.
set -e
case "$1" in
  configure|triggered)
    if [ ! -d /run/systemd/system ]; then
      echo "mailsvc: systemd is not running here: run /usr/lib/mailsvc/bin/mailsvc install once it is" >&2
      exit 0
    fi
    waiting=""
    for pair in ${WIRED_PACKAGES.flatMap(([d, ...pkgs]) => pkgs.map((p) => `${d}:${p}`)).join(' ')}; do
      daemon=\${pair%%:*}
      status=$(dpkg-query -W -f='\${db:Status-Status}' "\${pair#*:}" 2>/dev/null || true)
      case "$status" in
        ""|installed|not-installed|config-files) ;;
        *) case " $waiting " in *" $daemon "*) ;; *) waiting="$waiting $daemon" ;; esac ;;
      esac
    done
    if [ -n "$waiting" ] && [ "$1" = configure ]; then
      args=""
      for d in $waiting; do args="$args --no-wire $d"; done
      /usr/lib/mailsvc/bin/mailsvc install $args
      echo "mailsvc: apt is still setting up$waiting: mailsvc wires it when apt has finished (trigger ${WIRE_TRIGGER})"
      dpkg-trigger --no-await ${WIRE_TRIGGER}
    else
      /usr/lib/mailsvc/bin/mailsvc install
    fi
    ;;
esac
exit 0
`;

const PRERM = `#!/bin/sh
# Removal stops mailsvc's units (an upgrade leaves them to the new package's postinst, which restarts them).
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl stop mailsvc.service mailsvc-helper.socket mailsvc-helper.service 'mailsvc-*.timer' 'mailsvc-*.service' || true
fi
exit 0
`;

const POSTRM = `#!/bin/sh
# remove: the units, the command link and the releases go (mailsvc uninstall); data, settings, backups, logs
# and the user stay. purge: says what stays and how to remove it.
set -e
case "$1" in
  remove)
    if [ -x /opt/mailsvc/current/bin/mailsvc ]; then
      /opt/mailsvc/current/bin/mailsvc uninstall || echo "mailsvc: uninstall failed: remove /etc/systemd/system/mailsvc* and /opt/mailsvc by hand" >&2
    fi
    ;;
  purge)
    echo "mailsvc: purged. Kept, as they hold your mail accounts and settings:"
${KEPT.map(([p, what]) => `    echo "  ${p} (${what})"`).join('\n')}
    echo "  the user and group mailsvc"
    echo "mailsvc: to remove them too: rm -rf ${KEPT.map(([p]) => p).join(' ')} && userdel mailsvc"
    ;;
esac
exit 0
`;

function control(version, installedKb) {
  return [
    'Package: mailsvc',
    `Version: ${debianVersion(version)}`,
    'Architecture: amd64',
    `Maintainer: ${DEB_MAINTAINER}`,
    `Installed-Size: ${installedKb}`,
    `Depends: ${DEPENDS.join(', ')}`,
    `Recommends: ${RECOMMENDS.join(', ')}`,
    `Suggests: ${SUGGESTS.join(', ')}`,
    'Section: mail',
    'Priority: optional',
    'Description: management service for a self-hosted mail server',
    ' mailsvc manages a mail host built from Postfix, Dovecot, Rspamd, nginx,',
    ' fail2ban, nftables and postsrsd: an administration API with multi-factor',
    ' sign-in, a command line and a web panel, domains, mailboxes, aliases, DKIM,',
    ' backups and signed updates.',
    ' .',
    ' The package carries its own Node.js runtime. Its postinst runs',
    ' "mailsvc install", which copies the release into /opt/mailsvc/releases and',
    ' starts the service; removing the package keeps the data and settings.',
    '',
  ].join('\n');
}

function copyright() {
  return `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: mailsvc
Comment: The JavaScript dependencies under /usr/lib/mailsvc/node_modules carry their own licence
 files beside their code. The Node.js runtime in /usr/lib/mailsvc/runtime is under the licence below.

Files: *
Copyright: mailsvc contributors
License: AGPL-3.0-only
 This program is free software: you can redistribute it and/or modify it under the terms of the GNU
 Affero General Public License as published by the Free Software Foundation, version 3.
 .
 This program is distributed in the hope that it will be useful, but WITHOUT ANY WARRANTY; without even
 the implied warranty of MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE. See the GNU Affero General
 Public License for more details.
 .
 The full text is at https://www.gnu.org/licenses/agpl-3.0.txt

Files: usr/lib/mailsvc/runtime/*
Copyright: Node.js contributors and others
License: Expat and others
 Node.js is under the MIT (Expat) licence; the libraries built into it are under their own
 licences. The full text of each is in /usr/lib/mailsvc/runtime/LICENSE.
`;
}

function changelog(version) {
  const date = new Date(Number(process.env.SOURCE_DATE_EPOCH ?? Date.now() / 1000) * 1000).toUTCString().replace('GMT', '+0000');
  return `mailsvc (${debianVersion(version)}) stable; urgency=medium

  * mailsvc ${version}: see /usr/lib/mailsvc/docs for what it does.

 -- ${DEB_MAINTAINER}  ${date}
`;
}

/** Every regular file under `dir`, relative to it. */
function filesUnder(dir, base = dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? filesUnder(p, base) : e.isFile() ? [relative(base, p)] : [];
  });
}

/**
 * Builds the .deb of the staged release `pkgDir` into `outDir` and returns its path. The files are
 * root's (dpkg-deb --root-owner-group), directories 0755, files 0644 or 0755.
 */
export function buildDeb({ pkgDir, outDir, say, compression = 'gzip' }) {
  const version = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;
  const work = join(outDir, `.deb-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  const lib = join(work, 'usr', 'lib', 'mailsvc');
  mkdirSync(lib, { recursive: true });
  cpSync(pkgDir, lib, { recursive: true, verbatimSymlinks: true });
  // What only builds or packs the release has no place on a host: the lock file, the dependencies' lint
  // and version-control settings.
  rmSync(join(lib, 'package-lock.json'), { force: true });
  execFileSync('find', [lib, '-type', 'f', '(', '-name', '.eslintrc*', '-o', '-name', '.npmignore', '-o', '-name', '.gitattributes', '-o', '-name', '.gitignore', '-o', '-name', '.gitmodules', ')', '-delete']);
  execFileSync('chmod', ['-R', 'u=rwX,go=rX,ug-s', work]);
  // Shared objects are loaded, not run (0644), and carry no debugging symbols; nor does the runtime.
  const objects = execFileSync('find', [lib, '-type', 'f', '-name', '*.node']).toString().split('\n').filter(Boolean);
  for (const f of objects) chmodSync(f, 0o644);
  execFileSync('strip', ['--strip-unneeded', '--remove-section=.comment', '--remove-section=.note', ...objects, join(lib, 'runtime', 'bin', 'node')]);
  const doc = join(work, 'usr', 'share', 'doc', 'mailsvc');
  mkdirSync(doc, { recursive: true });
  writeFileSync(join(doc, 'copyright'), copyright());
  writeFileSync(join(doc, 'changelog.Debian.gz'), gzipSync(changelog(version), { level: 9 }));
  const overrides = join(work, 'usr', 'share', 'lintian', 'overrides');
  mkdirSync(overrides, { recursive: true });
  writeFileSync(join(overrides, 'mailsvc'), LINTIAN_OVERRIDES);
  const debian = join(work, 'DEBIAN');
  mkdirSync(debian);
  const md5 = filesUnder(work)
    .filter((f) => !f.startsWith('DEBIAN/'))
    .sort()
    .map((f) => `${createHash('md5').update(readFileSync(join(work, f))).digest('hex')}  ${f}`);
  writeFileSync(join(debian, 'md5sums'), `${md5.join('\n')}\n`);
  const kb = Math.ceil(filesUnder(work).reduce((n, f) => n + statSync(join(work, f)).size, 0) / 1024);
  writeFileSync(join(debian, 'control'), control(version, kb));
  // The postinst activates this trigger for itself when a daemon it wires is not configured yet (see POSTINST).
  writeFileSync(join(debian, 'triggers'), `interest-noawait ${WIRE_TRIGGER}\n`);
  for (const [name, text] of [['postinst', POSTINST], ['prerm', PRERM], ['postrm', POSTRM]]) {
    writeFileSync(join(debian, name), text);
    chmodSync(join(debian, name), 0o755);
  }
  for (const f of ['control', 'md5sums', 'triggers']) chmodSync(join(debian, f), 0o644);
  const file = join(outDir, debFileName(version));
  say(`Building ${debFileName(version)}…`);
  execFileSync('dpkg-deb', ['--root-owner-group', `-Z${compression}`, '--build', work, file], { stdio: ['ignore', 'ignore', 'inherit'] });
  rmSync(work, { recursive: true, force: true });
  return file;
}

/** Tags lintian gives a package that carries its own runtime and JavaScript dependencies, each with why it stands. */
const LINTIAN_OVERRIDES = `# The release carries its own Node.js (usr/lib/mailsvc/runtime/bin/node): bin/mailsvc starts every script with
# it, never through a script's #! line, so no nodejs package is needed (Debian 12's is too old for mailsvc).
mailsvc: missing-dep-for-interpreter node (does not satisfy nodejs:any) [usr/lib/mailsvc/*]
# Node.js builds its own zlib into its binary (as upstream releases it); it is the runtime this package carries.
mailsvc: embedded-library zlib [usr/lib/mailsvc/runtime/bin/node]
# Test scripts of a dependency (fastify's), never run on a host.
mailsvc: wrong-path-for-interpreter /usr/bin/bash != /bin/bash [usr/lib/mailsvc/node_modules/*]
`;
