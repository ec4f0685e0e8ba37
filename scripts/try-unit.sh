#!/usr/bin/env bash
# Runs the worker's systemd unit under a real systemd, as on a job server:
# a clean Debian 12 root booted with systemd-nspawn, dist/lockwatch_*.deb
# installed there with apt (postinst under systemd: the user, /etc/lockwatch),
# one job's .env file written as the README says, and
# `systemctl enable --now lockwatch-worker@outbound`. Then, against a
# redis-server on the host's loopback (the container shares its network):
#   1. the job runs, as the user lockwatch, writing in its state directory;
#   2. the worker stopped by SIGSTOP: its reaper kills the job by the lease
#      by itself, under the unit's hardening;
#   3. the worker killed by SIGKILL: systemd restarts it and the job runs again;
#   3b. the worker and its reaper killed together: what the job left (its
#      background child, fallen to init) is ended by systemd, and it runs again;
#   4. systemctl stop: the lock is released, nothing of the unit is left;
#   5. started again, then apt-get purge: prerm stops and disables the unit,
#      so no worker or job runs on from the deleted program.
# The root with systemd is made once from scripts/try-debs.sh's and cached
# beside it. Needs root (nspawn); about a minute once cached.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || exec sudo -E bash "$0" "$@"
base=${LOCKWATCH_DEBIAN_ROOT:-/var/cache/lockwatch/bookworm-root}
cached=$base-systemd
deb=$(ls dist/lockwatch_*.deb 2>/dev/null | head -1 || true)
[ -n "$deb" ] || { echo "dist/lockwatch_*.deb is missing: run bash scripts/package.sh first" >&2; exit 1; }
source scripts/lib/install-missing.sh
install_missing debootstrap systemd-container redis-server redis-tools
lockwatch=target/debug/lockwatch
[ -x "$lockwatch" ] || lockwatch=target/release/lockwatch

in_chroot() {
  local code=0
  mount --bind /proc "$1/proc"
  chroot "$1" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive sh -c "$2" || code=$?
  umount "$1/proc"
  return $code
}
if [ ! -x "$cached/lib/systemd/systemd" ]; then
  if [ ! -x "$base/usr/bin/apt-get" ]; then
    mkdir -p "$(dirname "$base")"
    debootstrap --variant=minbase bookworm "$base.part" http://deb.debian.org/debian
    mv "$base.part" "$base"
  fi
  rm -rf "$cached.part"
  cp -a "$base" "$cached.part"
  cp /etc/resolv.conf "$cached.part/etc/resolv.conf"
  in_chroot "$cached.part" 'apt-get update -qq && apt-get install -y -qq --no-install-recommends systemd systemd-sysv dbus >/dev/null'
  mv "$cached.part" "$cached"
fi

work=$(mktemp -d)
root="$work/srv-a"
redis_pid=""
leader=""
cleanup() {
  [ -n "$leader" ] && { nsenter -t "$leader" -a systemctl poweroff >/dev/null 2>&1 || kill "$leader" 2>/dev/null || true; }
  [ -n "$redis_pid" ] && { kill "$redis_pid" 2>/dev/null || true; }
  sleep 1
  pkill -f "systemd-nspawn -D $root" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cp -a "$cached" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
echo srv-a >"$root/etc/hostname"
mkdir -p "$root/var/tmp/lockwatch" && cp "$deb" "$root/var/tmp/lockwatch/"

port=$((20000 + RANDOM % 20000))
url="redis://127.0.0.1:$port"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$work/redis.log" 2>&1 &
redis_pid=$!
# It answers within moments, longer on a busy machine.
for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
# alice has the job on; the job needs a registered supervisor's flag.
redis-cli -p "$port" HSET "{outbound}:enabled:alice" on 1 >/dev/null
redis-cli -p "$port" SADD "{outbound}:users" alice >/dev/null

step() { printf '== %s\n' "$*"; }
fail() { echo "$*" >&2; echo "status: $(status_json); fence: $(fence); job: $(job_pid)" >&2; [ -n "$leader" ] && in_box journalctl -u lockwatch-worker@outbound --no-pager | tail -30 >&2; exit 1; }
in_box() { nsenter -t "$leader" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
# Waits up to $1 tenths of a second for the command after it to succeed.
within() {
  local tenths=$1
  shift
  for _ in $(seq 1 "$tenths"); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}
status_json() { "$lockwatch" --redis "$url" status --json 2>/dev/null || true; }
runs_on() { status_json | grep -q "\"state\":\"running\".*\"node\":\"$1\"\\|\"node\":\"$1\".*\"state\":\"running\""; }
fence() { redis-cli -p "$port" GET "{outbound}:fence"; }
# Running on srv-a under a fence other than $1: taken anew.
runs_anew() { runs_on srv-a && [ "$(fence)" != "$1" ]; }
# Pids as the host sees them (the container's processes are the host's too,
# and a minbase root has no ps): the job (the sh below the reaper) and the worker.
# Only in the container's namespaces: never a worker of the host's own.
job_pid() { job_pids | head -1; }
# The job and the background child it journals from.
job_pids() { pgrep --ns "$leader" --nslist pid -f "^sh -c .while :; do date" || true; }
worker_pid() { pgrep --ns "$leader" --nslist pid -f "^/usr/bin/lockwatch --job outbound worker" | head -1 || true; }

step "boot a clean Debian 12 with systemd (systemd-nspawn)"
systemd-nspawn -D "$root" --register=no --keep-unit --hostname=srv-a --console=passive -b >"$work/boot.log" 2>&1 &
nspawn=$!
within 100 pgrep -P "$nspawn" >/dev/null || fail "nspawn started no container: $(cat "$work/boot.log")"
leader=$(pgrep -P "$nspawn" | head -1)
booted() { [ "$(in_box systemctl is-system-running 2>/dev/null)" = running ] || [ "$(in_box systemctl is-system-running 2>/dev/null)" = degraded ]; }
within 300 booted || fail "systemd did not finish booting: $(in_box systemctl is-system-running 2>&1)"
echo "systemd $(in_box systemctl --version | head -1 | cut -d' ' -f2) is $(in_box systemctl is-system-running)"

step "apt-get install ./lockwatch_*.deb, the job's .env, systemctl enable --now"
in_box sh -c "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /var/tmp/lockwatch/$(basename "$deb") >/var/tmp/lockwatch/apt.log 2>&1" ||
  fail "apt-get install failed: $(tail -20 "$root/var/tmp/lockwatch/apt.log")"
in_box getent passwd lockwatch >/dev/null || fail "postinst made no user lockwatch"
# The job: a line every 0.2 s into its state directory (writable under
# ProtectSystem=strict), from a background child of the job's process.
cat >"$root/var/tmp/lockwatch/outbound.env" <<ENV
LOCKWATCH_REDIS_URL=$url
LOCKWATCH_LEASE=3s
LOCKWATCH_STOP_GRACE=2s
LOCKWATCH_COMMAND=/usr/local/bin/outbound-job
ENV
cat >"$root/usr/local/bin/outbound-job" <<'JOB'
#!/bin/sh
exec sh -c '(while :; do date +%s >> /var/lib/lockwatch/outbound.ticks; sleep 0.2; done) & wait'
JOB
chmod 0755 "$root/usr/local/bin/outbound-job"
in_box install -o root -g root -m 0600 /var/tmp/lockwatch/outbound.env /etc/lockwatch/outbound.env
in_box systemctl enable --now lockwatch-worker@outbound.service 2>&1 | sed 's/^/  /'

step "1. the job runs, as lockwatch, writing in its state directory"
within 150 runs_on srv-a || fail "the job does not run on srv-a: $(status_json)"
within 50 test -n "$(job_pid)" || fail "no job process"
uid=$(in_box getent passwd lockwatch | cut -d: -f3)
[ "$(stat -c %u "/proc/$(job_pid)")" = "$uid" ] || fail "the job runs as uid $(stat -c %u "/proc/$(job_pid)"), not lockwatch's $uid"
within 30 test -s "$root/var/lib/lockwatch/outbound.ticks" || fail "the job wrote nothing in /var/lib/lockwatch"
first_fence=$(fence)
echo "running on srv-a as lockwatch, fence $first_fence, $(wc -l <"$root/var/lib/lockwatch/outbound.ticks") ticks written"

step "2. the worker stopped (SIGSTOP): the reaper kills the job within the lease"
worker=$(worker_pid)
job=$(job_pid)
stopped_at=$(date +%s%N)
kill -STOP "$worker"
within 50 test ! -e "/proc/$job" || { kill -CONT "$worker"; fail "the job outlived its lease while the worker was stopped"; }
echo "job killed $(( ($(date +%s%N) - stopped_at) / 1000000 )) ms after SIGSTOP (lease 3 s)"
kill -CONT "$worker"
echo "SIGCONT: the worker says \"$(in_box journalctl -u lockwatch-worker@outbound --no-pager -o cat | grep -o 'the lease could not be renewed.*' | tail -1)\""

step "3. the worker killed (SIGKILL): systemd restarts it and the job runs again"
job_again() { runs_on srv-a && [ -n "$(job_pid)" ] && [ "$(job_pid)" != "$job" ]; }
within 100 job_again || fail "the job did not run again after SIGCONT"
second_fence=$(fence)
worker=$(worker_pid)
killed_at=$(date +%s%N)
kill -KILL "$worker"
within 200 runs_anew "$second_fence" || fail "the worker was not restarted, or took the job not again"
[ "$(worker_pid)" != "$worker" ] || fail "the same worker runs"
# Whoever comes first lets go of the dead worker's lock: its reaper, once the job's processes are
# gone, or the unit's ExecStopPost, once nothing of the unit runs; the other then finds it gone.
journal=$(in_box journalctl -u lockwatch-worker@outbound --no-pager -o cat)
if grep -q "nothing of its unit runs any more: released it" <<<"$journal"; then released_by="ExecStopPost"
elif grep -q "died and its job's processes are gone; released the lock" <<<"$journal"; then released_by="the reaper"
else fail "neither the reaper nor ExecStopPost let go of the dead worker's lock"; fi
echo "the dead worker's lock released by $released_by; restarted by systemd (NRestarts=$(in_box systemctl show -p NRestarts --value lockwatch-worker@outbound)); running again $(( ($(date +%s%N) - killed_at) / 1000000 )) ms after the SIGKILL (lease 3 s), fence $(fence) (was $second_fence)"

step "3b. the worker and its reaper killed together (as pkill -9 lockwatch does): systemd ends what the job left"
third_fence=$(fence)
worker=$(worker_pid)
reaper=$(pgrep -P "$worker" | head -1)
jobs=$(job_pids)
[ -n "$reaper" ] && [ -n "$jobs" ] || fail "no reaper or job below the worker"
killed_at=$(date +%s%N)
kill -KILL "$worker" "$reaper"
none_left() { for p in $jobs; do [ -e "/proc/$p" ] && return 1; done; return 0; }
within 50 none_left || fail "the job's processes $jobs outlived the worker and its reaper"
echo "the job and its background child gone $(( ($(date +%s%N) - killed_at) / 1000000 )) ms after kill -9 of the worker and the reaper"
within 200 runs_anew "$third_fence" || fail "the worker was not restarted, or took the job not again"

step "4. systemctl stop: the lock released, nothing of the unit left"
in_box systemctl stop lockwatch-worker@outbound
[ "$(redis-cli -p "$port" EXISTS "{outbound}:lock")" = 0 ] || fail "the lock is still held after systemctl stop"
[ -z "$(job_pid)" ] && [ -z "$(worker_pid)" ] || fail "the job or the worker outlived systemctl stop"
echo "lock released; the unit is $(in_box systemctl is-active lockwatch-worker@outbound || true), no process of it left"
step "5. apt-get purge while the unit runs: stopped, disabled, the lock released"
fifth_fence=$(fence)
in_box systemctl start lockwatch-worker@outbound
within 200 runs_anew "$fifth_fence" || fail "the unit did not run the job again"
in_box sh -c "DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq lockwatch >/var/tmp/lockwatch/purge.log 2>&1" ||
  fail "apt-get purge failed: $(tail -20 "$root/var/tmp/lockwatch/purge.log")"
[ -z "$(job_pid)" ] && [ -z "$(worker_pid)" ] || fail "the job or the worker outlived the purge"
[ "$(redis-cli -p "$port" EXISTS "{outbound}:lock")" = 0 ] || fail "the lock is still held after the purge"
links=$(ls "$root"/etc/systemd/system/*.wants/ 2>/dev/null | grep lockwatch || true)
[ -z "$links" ] || fail "the unit's enablement stayed: $links"
echo "purged: no worker or job left, the lock released, no enablement left"
echo "all tried: the worker's unit runs, restarts and stops under systemd $(in_box systemctl --version | head -1 | cut -d' ' -f2)"
