#!/usr/bin/env bash
# The main command: builds lockwatch, starts a private redis-server on a free
# port in a temp dir, enables the job for you, and watches it live.
# Ctrl-C stops everything and removes the temp dir.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-test-deps.sh
cargo build --quiet --bin lockwatch
bin="$PWD/target/debug/lockwatch"

dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
  --notify-keyspace-events Kgx --daemonize no --logfile "$dir/redis.log" &
redis_pid=$!
trap 'kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done

export LOCKWATCH_REDIS_URL="redis://127.0.0.1:$port"
"$bin" enable
cat <<TIP

A private Redis runs at $LOCKWATCH_REDIS_URL. In another terminal, try:
  export LOCKWATCH_REDIS_URL=$LOCKWATCH_REDIS_URL
  $bin status
  redis-cli -p $port HSET '{outbound}:lock' 'b6f1c2d4-uuid:1' 1   # a Redisson-style holder
  $bin disable
Ctrl-C here stops the watch and this Redis.

TIP
"$bin" watch
