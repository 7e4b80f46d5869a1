/**
 * The privilege map checked on a real install (run inside the guest, as
 * root, with sh): every path a root unit executes or reads as configuration
 * — each root mailsvc service's Exec*= programs and the links to them, their
 * EnvironmentFile=s, the unit files and drop-ins, the interpreter, the whole
 * release tree behind `current` and every release, /etc/mailsvc, the backup
 * directory — and every directory above each of them, tested with
 * `test -w` as the `mailsvc` user (runuser). Prints `root unit: <name>` per
 * root service found, `writable: <path>` per finding and `checked <n>`.
 */
export const PRIVILEGE_WALK = String.raw`
set -eu
list=$(mktemp)
emit() { printf '%s\n' "$1" >> "$list"; }
chain() { # a path and every link on the way to its target
  p=$1; n=0
  emit "$p"
  while [ -L "$p" ] && [ $n -lt 40 ]; do
    t=$(readlink "$p"); case $t in /*) p=$t ;; *) p=$(dirname "$p")/$t ;; esac
    emit "$p"; n=$((n+1))
  done
  emit "$(readlink -f "$1")"
}
for u in /etc/systemd/system/mailsvc*; do
  emit "$u"
  [ -d "$u" ] && find "$u" >> "$list"
  case $u in *.service) ;; *) continue ;; esac
  user=$(sed -n 's/^User=//p' "$u" | tail -n 1)
  case $user in ''|root|0) ;; *) continue ;; esac
  echo "root unit: $(basename "$u")"
  sed -n 's/^Exec[A-Za-z]*=//p' "$u" | while read -r prog rest; do
    prog=$(printf '%s' "$prog" | sed 's/^[-@:+!]*//')
    [ -n "$prog" ] && chain "$prog"
  done
  sed -n 's/^EnvironmentFile=//p' "$u" | sed 's/^-//' | while read -r f; do emit "$f"; done
done
chain /usr/local/bin/mailsvc
# The bundle's interpreter (#!/usr/bin/env node).
chain /usr/bin/env; chain "$(command -v node)"
chain /opt/mailsvc/current
find /opt/mailsvc /etc/mailsvc /var/backups/mailsvc /etc/systemd/system/multi-user.target.wants /etc/systemd/system/timers.target.wants /etc/systemd/system/sockets.target.wants >> "$list" 2>/dev/null || true
find "$(readlink -f /opt/mailsvc/current)" >> "$list"
# Every directory above each path, up to /.
all=$(mktemp)
awk '{ print; p = $0; while (match(p, /\/[^\/]*$/) && RSTART > 1) { p = substr(p, 1, RSTART - 1); print p } print "/" }' "$list" | sort -u > "$all"
echo "checked $(wc -l < "$all")"
chmod 0644 "$all"
runuser -u mailsvc -- sh -c 'while IFS= read -r p; do if [ -e "$p" ] && [ -w "$p" ]; then echo "writable: $p"; fi; done' < "$all"
rm -f "$list" "$all"
`;
