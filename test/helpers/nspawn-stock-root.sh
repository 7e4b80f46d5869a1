#!/usr/bin/env bash
# Builds the stock Debian 12 root the first-install tests boot (test/helpers/first-install.ts): what a
# bare Debian 12 host has (debootstrap minbase with systemd, wget and the CA certificates), apt's package
# lists, and in apt's cache the .debs that `apt-get install ./mailsvc_<v>_amd64.deb` fetches for the
# package's Depends and Recommends (PKG…), downloaded, not installed. The guest has no route to Debian's
# archive, so apt installs them from its cache, as it would after fetching them; nothing else is in the root.
# Usage: nspawn-stock-root.sh DEST PKG… — built in DEST.tmp-<pid> and renamed at the end; run under the
# cache's flock (nspawn.ts): a DEST another build finished while this one waited is used as it is.
set -euo pipefail
dest=$1
shift
if [ -e "$dest/etc/os-release" ]; then exit 0; fi
rm -rf "$dest"
mirror=${MAILSVC_TEST_DEBIAN_MIRROR:-http://deb.debian.org/debian}
base=systemd,systemd-sysv,dbus,iproute2,procps,ca-certificates,util-linux,passwd,login,wget,apt-utils
tmp="$dest.tmp-$$"
trap 'umount -R "$tmp/proc" "$tmp/sys" "$tmp/dev" 2>/dev/null || true; rm -rf "$tmp"' EXIT
mkdir -p "$(dirname "$dest")"
debootstrap --variant=minbase --include="$base" bookworm "$tmp" "$mirror"
cp /etc/resolv.conf "$tmp/etc/resolv.conf"
chroot "$tmp" apt-get update -qq
chroot "$tmp" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --download-only "$@" >/dev/null
: > "$tmp/etc/resolv.conf"
echo debian > "$tmp/etc/hostname"
trap - EXIT
mv -T "$tmp" "$dest"
