#!/usr/bin/env bash
# Installs dist/*.deb (bash scripts/package.sh) into a clean Debian 12 root
# with apt, as an IT admin would, and tries them there (after lintian has
# found no error or warning in them): every binary's
# libraries resolve, `lockwatch --version` and `lockwatch status` against a
# redis-server on loopback work, the tray app, run by a supervisor with
# only the defaults an admin put in /etc/lockwatch/settings.json, reads that
# Redis, starts on an X display and
# docks in an XEmbed tray, and the packages uninstall (keeping the admin's
# file). The root is made once
# by `debootstrap --variant=minbase bookworm` and cached in
# ${LOCKWATCH_DEBIAN_ROOT:-/var/cache/lockwatch/bookworm-root}; each run
# works on a copy. Needs root (chroot, mounts). Runs in a PID namespace of
# its own: what the packages' scripts stop or start cannot reach the host's
# processes, and whatever it started ends with it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || exec sudo -E bash "$0" "$@"
[ -n "${LOCKWATCH_OWN_PIDS:-}" ] || exec env LOCKWATCH_OWN_PIDS=1 unshare --pid --fork --mount-proc bash "$0" "$@"
cached=${LOCKWATCH_DEBIAN_ROOT:-/var/cache/lockwatch/bookworm-root}
debs=(dist/lockwatch_*.deb dist/lockwatch-desktop_*.deb)
for d in "${debs[@]}"; do [ -f "$d" ] || { echo "$d is missing: run bash scripts/package.sh first" >&2; exit 1; }; done
source scripts/lib/install-missing.sh
install_missing debootstrap xvfb trayer x11-utils redis-server lintian
if [ ! -x "$cached/usr/bin/apt-get" ]; then
  mkdir -p "$(dirname "$cached")"
  debootstrap --variant=minbase bookworm "$cached.part" http://deb.debian.org/debian
  mv "$cached.part" "$cached"
fi

work=$(mktemp -d)
root="$work/root"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for m in "$root/tmp/.X11-unix" "$root/dev/pts" "$root/dev" "$root/proc"; do mountpoint -q "$m" && umount -l "$m"; done
  rm -rf "$work"
}
trap cleanup EXIT
cp -a "$cached" "$root"
mount --bind /proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "${debs[@]}" "$root/tmp/"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

step() { printf '== %s\n' "$*"; }
step "lintian: no error or warning (the one note left: no manual pages; --help is the reference)"
lintian --fail-on error,warning --suppress-tags no-manual-page "${debs[@]}"
echo ok

step "apt-get install ./lockwatch*.deb into a clean Debian 12 root"
in_root apt-get update -qq
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ./tmp/"$(basename "${debs[0]}")" ./tmp/"$(basename "${debs[1]}")" >"$work/apt.log" 2>&1 \
  || { tail -30 "$work/apt.log"; exit 1; }
echo "installed: $(in_root dpkg-query -W -f='${Package} ${Version}\n' lockwatch lockwatch-desktop | tr '\n' ' ')"

step "every binary's libraries resolve"
for bin in /usr/bin/lockwatch /usr/bin/lockwatch-tray; do
  if in_root ldd "$bin" | grep "not found"; then echo "$bin: libraries missing" >&2; exit 1; fi
done
in_root sh -c 'ldconfig -p | grep -q libayatana-appindicator3.so.1' || { echo "libayatana-appindicator3 missing" >&2; exit 1; }
echo ok

step "lockwatch --version, and status against a redis-server on loopback"
in_root lockwatch --version
port=$((20000 + RANDOM % 20000))
redis-server --port "$port" --bind 127.0.0.1 --save '' --daemonize no >"$work/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$port" HSET "{outbound}:enabled:alice" on 1 >/dev/null
redis-cli -p "$port" SADD "{outbound}:users" alice >/dev/null
set +e
in_root lockwatch --redis "redis://127.0.0.1:$port" status
code=$?
set -e
# DOWN (exit 2: enabled, nobody runs it) is the truth here; 3 would mean Redis could not be read.
[ "$code" = 2 ] || { echo "lockwatch status exited $code, not 2 (DOWN)" >&2; exit 1; }

step "the tray app, as a supervisor with the machine's defaults only, docks in an XEmbed tray and reads Redis"
display=:$((100 + RANDOM % 100))
Xvfb "$display" -screen 0 800x600x24 -nolisten tcp >/dev/null 2>&1 &
pids+=($!)
sleep 1
mkdir -p "$root/tmp/.X11-unix" && mount --bind /tmp/.X11-unix "$root/tmp/.X11-unix"
DISPLAY=$display trayer --edge top --align right --widthtype pixel --width 120 --height 24 >/dev/null 2>&1 &
pids+=($!)
sleep 1
# As an admin pushes it (README, Rolling out to a team): read by every supervisor.
printf '{"settings": {"redis_url": "redis://127.0.0.1:%s"}}\n' "$port" >"$root/etc/lockwatch/settings.json"
in_root useradd --create-home alice
clients() { redis-cli -p "$port" CLIENT LIST | grep -vc "cmd=client|list" || true; }
before=$(clients)
chroot --userspec=alice:alice "$root" env -i PATH=/usr/bin:/bin HOME=/home/alice USER=alice DISPLAY="$display" LANG=C.UTF-8 \
  lockwatch-tray >"$work/tray.log" 2>&1 &
pids+=($!)
# The docked icon: a window of the app's class inside trayer's panel.
docked() { DISPLAY=$display xwininfo -root -tree | sed -n '/"panel": ("panel" "trayer")/,/^     0x/p' | grep -q '"lockwatch-tray"'; }
for _ in $(seq 1 100); do
  docked && break
  sleep 0.2
done
docked || {
  echo "the tray icon did not dock:"
  DISPLAY=$display xwininfo -root -tree | head -40
  cat "$work/tray.log"
  exit 1
}
grep -q "tray host found" "$work/tray.log" || { cat "$work/tray.log"; exit 1; }
for _ in $(seq 1 50); do
  [ "$(clients)" -gt "$before" ] && break
  sleep 0.2
done
[ "$(clients)" -gt "$before" ] || { echo "the tray did not connect to the Redis of /etc/lockwatch/settings.json:"; cat "$work/tray.log"; exit 1; }
echo "docked; $(grep -o 'tray host found.*' "$work/tray.log"); alice's tray reads the Redis that /etc/lockwatch/settings.json names"

step "a Chinese font came with the desktop package"
font=$(in_root dpkg-query -W -f='${db:Status-Status} ${Package}\n' fonts-wqy-microhei fonts-noto-cjk fonts-wqy-zenhei 2>/dev/null | sed -n 's/^installed //p' | head -1)
[ -n "$font" ] || { echo "no font for Chinese came with lockwatch-desktop: it would show as empty boxes" >&2; exit 1; }
echo "Chinese: $font"

step "apt-get purge while alice's tray and a worker run: no process of them left, no start at login for everyone"
tray=${pids[-1]}
# A worker started by hand (no systemd in this root) running a job, and the
# computer's start at login as the README's rollout makes it.
in_root lockwatch --redis "redis://127.0.0.1:$port" worker --node try-debs --lease 3s -- sleep 1000 >"$work/worker.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 50); do
  job=$(redis-cli -p "$port" HGET "{outbound}:node:try-debs" child_pid)
  [ -n "$job" ] && break
  sleep 0.2
done
[ -n "$job" ] || { echo "the worker ran no job:"; cat "$work/worker.log"; exit 1; }
worker=$(pgrep -f "^lockwatch --redis redis://127.0.0.1:$port worker" | head -1)
# Look-alikes outside the root, named as the packages' scripts look for them
# (another install, a developer's build): the purge must leave them running.
mkdir "$work/elsewhere"
dpkg-deb --fsys-tarfile "${debs[0]}" | tar -x -O ./usr/bin/lockwatch >"$work/elsewhere/lockwatch"
chmod +x "$work/elsewhere/lockwatch"
cp "$(command -v sleep)" "$work/elsewhere/lockwatch-tray"
PATH="$work/elsewhere:$PATH" lockwatch --redis "redis://127.0.0.1:$port" --job elsewhere worker --node elsewhere -- sleep 1000 \
  >"$work/elsewhere.log" 2>&1 &
pids+=($!)
lookalike_worker=$!
"$work/elsewhere/lockwatch-tray" 1000 &
pids+=($!)
lookalike_tray=$!
sleep 1
for pid in "$lookalike_worker" "$lookalike_tray"; do
  [ -e "/proc/$pid" ] || { echo "the look-alike $pid did not start:"; cat "$work/elsewhere.log"; exit 1; }
done
cp "$root/usr/share/applications/lockwatch.desktop" "$root/etc/xdg/autostart/lockwatch.desktop"
in_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq lockwatch-desktop lockwatch >/dev/null
left=$(in_root sh -c 'ls /usr/bin/lockwatch* /usr/lib/systemd/system/lockwatch* /etc/xdg/autostart/lockwatch* 2>/dev/null' || true)
[ -z "$left" ] || { echo "left behind: $left" >&2; exit 1; }
for pid in "$tray" "$worker" "$job"; do
  for _ in $(seq 1 50); do
    [ -e "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ] || break
    sleep 0.2
  done
  [ -e "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat")" != Z ] && { echo "process $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline")) outlived the purge" >&2; exit 1; }
done
[ "$(redis-cli -p "$port" EXISTS "{outbound}:lock")" = 0 ] || { echo "the worker's lock is still held after the purge" >&2; exit 1; }
grep -q "SIGTERM received" "$work/worker.log" || { cat "$work/worker.log"; exit 1; }
[ -f "$root/etc/lockwatch/settings.json" ] || { echo "purge deleted the admin's /etc/lockwatch/settings.json" >&2; exit 1; }
for pid in "$lookalike_worker" "$lookalike_tray"; do
  [ -e "/proc/$pid" ] || { echo "the purge stopped $pid, a look-alike outside the root:"; cat "$work/elsewhere.log"; exit 1; }
done
echo "the look-alike worker and tray outside the root ran on"
echo "all tried: the packages install, run and go in a clean Debian 12: the tray, the worker and its job stopped (lock released), /etc/xdg/autostart/lockwatch.desktop removed, the admin's settings.json kept"
