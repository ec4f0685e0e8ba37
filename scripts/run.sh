#!/usr/bin/env bash
# The main command: builds lockwatch and its tray app, starts `lockwatch demo`
# (a private redis-server, two workers wh-east-1 and wh-west-1 running a
# sample outbound loop, the job enabled for you) and opens the tray app on it.
# Without a desktop (no DISPLAY) it shows `lockwatch watch` instead.
# Ctrl-C (or quitting the tray app) stops everything it started.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "Checking the system packages lockwatch needs; a fresh machine gets them installed first (apt-get: a few minutes)."
bash scripts/setup-test-deps.sh --run
echo "Building lockwatch and its tray app (cargo build); the first build takes a few minutes, later ones seconds."
# Both packages in one build, as `cargo test --workspace` builds them: the
# same features, so neither command rebuilds what the other built.
cargo build -p lockwatch -p lockwatch-tray --bins
target="${CARGO_TARGET_DIR:-$PWD/target}"
bin="$target/debug/lockwatch"
tray="$target/debug/lockwatch-tray"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lockwatch-run.XXXXXX")
demo="" log_tail="" viewer=""

running() { # PID: true while it runs (a zombie has ended: it only waits to be reaped)
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $state != Z* ]]
}

stop() { # SECONDS PID...: SIGTERM, up to SECONDS to end, then SIGKILL; reaps them
  local grace=$1 pid i
  shift
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    for ((i = 0; i < grace * 10; i++)); do
      running "$pid" || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}

cleanup() {
  set +e
  trap '' INT TERM
  [ -n "$viewer" ] && stop 10 "$viewer"
  if [ -n "$demo" ]; then
    # The demo stops its workers (and they their jobs) and its Redis; should
    # it fail to, whatever it left is stopped here.
    local children
    children=$(ps -o pid= --ppid "$demo" 2>/dev/null)
    echo "Stopping the demo: its workers, their jobs and its Redis."
    stop 30 "$demo"
    for pid in $children; do running "$pid" && kill -TERM "$pid" 2>/dev/null; done
  fi
  [ -n "$log_tail" ] && stop 2 "$log_tail"
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The demo's messages (its Redis, its workers, a worker that ends) are shown
# here; the sample job's own output goes to a file, or it would drown them.
"$bin" demo >"$tmp/job-output.log" 2>"$tmp/demo.log" &
demo=$!
url=""
until [ -n "$url" ]; do
  running "$demo" || { cat "$tmp/demo.log" >&2; echo "lockwatch demo ended before its Redis was up (its messages are above)." >&2; exit 1; }
  sleep 0.2
  url=$(grep -o -m1 'Redis at redis://127\.0\.0\.1:[0-9]*' "$tmp/demo.log" | cut -d' ' -f3) || true
done
# What the demo said so far, then whatever it says later, in order.
shown=$(stat -c %s "$tmp/demo.log")
head -c "$shown" "$tmp/demo.log"
tail -c +$((shown + 1)) -s 0.2 --pid="$demo" -f "$tmp/demo.log" &
log_tail=$!
echo "The sample job's output: tail -f $tmp/job-output.log"
export LOCKWATCH_REDIS_URL="$url"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  echo "Starting the tray app: its icon is in your panel's tray, its menu shows the job. It logs here. Ctrl-C stops everything."
  "$tray" &
  viewer=$!
  what="the tray app"
else
  echo "No desktop here (DISPLAY is not set): showing 'lockwatch watch' instead of the tray app. Ctrl-C stops everything."
  "$bin" watch &
  viewer=$!
  what="lockwatch watch"
fi
# Whichever ends first (Quit in the tray menu, or the demo failing) ends the rest.
ended=0
wait -n -p first "$demo" "$viewer" || ended=$?
if [ "${first:-}" = "$demo" ]; then
  demo="" # reaped: its pid may be reused, so cleanup must not signal it
  echo "lockwatch demo ended (exit $ended): stopping $what."
else
  viewer=""
  echo "$what ended (exit $ended): stopping the demo."
fi
