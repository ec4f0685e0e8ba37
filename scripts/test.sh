#!/usr/bin/env bash
# The test command: installs what is missing, then runs every test of the
# workspace against real redis-server processes the tests start themselves,
# and the core tests again on each other server lockwatch supports.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step says how long it took; the test binaries' own times are kept
# in $log and the slowest listed at the end.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
step() {
  local started=$SECONDS
  "$@"
  echo "test.sh: $* took $((SECONDS - started)) s" >&2
}
tests() {
  cargo test --locked "$@" 2>&1 | tee -a "$log"
}
step bash scripts/setup-test-deps.sh
# lockwatch.exe and Wine, for tests/wine.rs.
step bash scripts/build-windows.sh
step tests --workspace "$@"
step node --test ui/tests/
# No import circle, between the crates' modules or their files.
for crate in src src-tauri/src; do python3 scripts/module-cycles.py "$crate" --files; done
# The engines decide without I/O: nothing they import does any.
python3 scripts/engine-imports.py

# Redis 6.2 and Valkey 8 and 9 (scripts/fetch-servers.sh), first on PATH.
# A test that needs what an older server lacks (ACL selectors, functions)
# says so and checks nothing there (`common::has_selectors`).
# The three passes run side by side (their tests mostly wait on leases and
# timeouts), each from the binaries built once, each with its own output.
servers=$(bash scripts/fetch-servers.sh)
core=(--test worker --test status --test incidents --test acl --test sentinel)
bins=$(cargo test --locked --no-run --message-format=json "${core[@]}" 2>/dev/null |
  python3 -c 'import json, sys; [print(m["executable"]) for m in map(json.loads, sys.stdin) if m.get("executable") and m["target"]["kind"] == ["test"]]')
pass_on() {
  local name=$1 dir=$2 bin
  echo "== the core tests on $name ($dir)"
  for bin in $bins; do
    echo "     Running ${bin##*/}"
    PATH="$dir:$PATH" "$bin" || return 1
  done
}
started=$SECONDS
pids=()
while read -r name dir _; do
  pass_on "$name" "$dir" >"$log.$name" 2>&1 &
  pids+=("$!:$name")
done <<<"$servers"
failed=0
for p in "${pids[@]}"; do
  name=${p#*:}
  wait "${p%%:*}" || failed=1
  cat "$log.$name" | tee -a "$log"
  rm -f "$log.$name"
done
echo "test.sh: the core tests on the other servers took $((SECONDS - started)) s" >&2
[[ $failed == 0 ]] || { echo "test.sh: the core tests failed on another server (above)" >&2; exit 1; }

echo "test.sh: the slowest test binaries (seconds, each run):" >&2
awk '/^     Running /{bin=($2=="unittests" ? $3 : $2)} /^test result:/{for(i=1;i<=NF;i++) if($i=="in"){sub("s","",$(i+1)); print $(i+1), bin}}' "$log" |
  sort -rn | head -8 >&2
