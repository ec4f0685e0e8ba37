#!/usr/bin/env bash
# The main command: builds lockwatch and its tray app, starts `lockwatch demo`
# (a private redis-server, two workers wh-east-1 and wh-west-1 running a
# sample outbound loop, the job enabled for you) and opens the tray app on it.
# Without a desktop (no DISPLAY) it shows `lockwatch watch` instead.
# Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-test-deps.sh
cargo build --quiet --bin lockwatch --bin lockwatch-tray
target="${CARGO_TARGET_DIR:-$PWD/target}"
bin="$target/debug/lockwatch"

log=$(mktemp)
"$bin" demo 2>"$log" >/dev/null &
demo=$!
trap 'kill -TERM "$demo" 2>/dev/null; wait "$demo" 2>/dev/null; rm -f "$log"' EXIT
until url=$(grep -o 'redis://127.0.0.1:[0-9]*' "$log" | head -n1) && [ -n "$url" ]; do
  kill -0 "$demo" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.2
done
cat "$log"
export LOCKWATCH_REDIS_URL="$url"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  echo "Starting the tray app (its menu is in your panel's tray; it logs here)."
  "$target/debug/lockwatch-tray"
else
  echo "No desktop here (DISPLAY is not set): showing lockwatch watch instead of the tray app."
  "$bin" watch
fi
