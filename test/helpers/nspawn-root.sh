#!/usr/bin/env bash
# Builds the Debian 12 root the installed-host test boots (test/helpers/nspawn.ts).
# Usage: nspawn-root.sh DEST — built in DEST.tmp-<pid>, renamed at the end, so a killed build
# never leaves a half root. The cache key is this file's hash: change the package lists here and
# the next run builds a new root. Run under the cache's flock (nspawn.ts): a DEST that another
# build finished while this one waited for the lock is used as it is.
set -euo pipefail
dest=$1
if [ -e "$dest/etc/os-release" ]; then exit 0; fi
# Not finished (no os-release): left by a build from before the lock; nobody else builds it now.
rm -rf "$dest"
mirror=${MAILSVC_TEST_DEBIAN_MIRROR:-http://deb.debian.org/debian}
base=systemd,systemd-sysv,dbus,iproute2,nftables,procps,ca-certificates,libstdc++6,util-linux,passwd,login
daemons="postfix postfix-sqlite dovecot-core dovecot-imapd dovecot-lmtpd dovecot-sqlite dovecot-auth-lua lua-socket sqlite3 curl fail2ban python3-systemd rspamd postsrsd"
tmp="$dest.tmp-$$"
trap 'umount -R "$tmp/proc" "$tmp/sys" "$tmp/dev" 2>/dev/null || true; rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$dest")"
debootstrap --variant=minbase --include="$base" bookworm "$tmp" "$mirror"
# Daemons: installed, not started (no systemd runs in the chroot); Postfix with no configuration.
printf '#!/bin/sh\nexit 101\n' > "$tmp/usr/sbin/policy-rc.d"; chmod 0755 "$tmp/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$tmp/etc/resolv.conf"
chroot "$tmp" sh -c 'echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections'
chroot "$tmp" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $daemons >/dev/null
chroot "$tmp" apt-get clean
# A loopback-only Postfix, so that it starts (with "No configuration" it has no main.cf).
cp "$tmp/usr/share/postfix/main.cf.debian" "$tmp/etc/postfix/main.cf"
printf 'myhostname = mail.example.test\ninet_interfaces = loopback-only\nmydestination = localhost\n' >> "$tmp/etc/postfix/main.cf"
chroot "$tmp" newaliases
rm -f "$tmp/usr/sbin/policy-rc.d"
rm -rf "$tmp"/var/lib/apt/lists/*
echo mailsvc-guest > "$tmp/etc/hostname"
: > "$tmp/etc/resolv.conf"
trap - EXIT
mv -T "$tmp" "$dest"
