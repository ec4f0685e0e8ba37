#!/usr/bin/env bash
# The test command: installs what is missing, then runs every test of the
# workspace against real redis-server processes the tests start themselves,
# and the core tests again on each other server lockwatch supports.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step says how long it took; the test runs' output is kept in $log
# and the slowest runs listed at the end.
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
step() {
  local started=$SECONDS
  "$@"
  echo "test.sh: $* took $((SECONDS - started)) s" >&2
}
step bash scripts/setup-test-deps.sh
# The property tests search from a seed of the day (UTC): a failure is
# repeated on its day by the same command, and the search moves on each
# day. PROPTEST_RNG_SEED set beforehand chooses another.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-$(date -u +%Y%m%d)}"
# With arguments (`scripts/test.sh --test worker`), plain `cargo test` with them.
if (($#)); then exec cargo test --locked "$@"; fi
# lockwatch.exe and Wine, for tests/wine.rs.
step bash scripts/build-windows.sh
# Every test binary of the workspace, built once; listed as "dir binary".
build() {
  cargo test --locked --workspace --no-run --message-format=json-render-diagnostics |
    python3 -c '
import json, os, sys
for m in map(json.loads, sys.stdin):
    if m.get("executable") and m.get("profile", {}).get("test"):
        print(os.path.dirname(m["manifest_path"]), m["executable"])' >"$log/binaries"
}
step build
# Redis 6.2 and Valkey 8 and 9 (scripts/fetch-servers.sh): the core tests run
# again with each first on PATH. A test that needs what an older server lacks
# (ACL selectors, functions) says so and checks nothing there
# (`common::has_selectors`).
servers=$(bash scripts/fetch-servers.sh)
core=" worker status incidents acl sentinel "

# The runs: each binary once, the core ones again on each other server; the
# longest first (seconds, as last measured) so that the lanes end together.
weight() {
  case $1 in
    serve | worker) echo 76 ;; soak) echo 66 ;; sentinel) echo 45 ;; cluster) echo 40 ;;
    exactly_one | incidents | tray) echo 30 ;; switch_off) echo 23 ;;
    main_command | dashboard | watch | acl) echo 18 ;; beat) echo 15 ;;
    *) echo 5 ;;
  esac
}
while read -r dir bin; do
  name=${bin##*/}
  name=${name%-*}
  echo "$(weight "$name") $name - $dir $bin"
  if [[ $core == *" $name "* ]]; then
    while read -r server path _; do echo "$(weight "$name") $name $server $dir $bin $path"; done <<<"$servers"
  fi
done <"$log/binaries" | sort -rn >"$log/runs"

# They run side by side, $LANES at a time (their tests mostly wait on leases
# and timeouts); each run's output is printed whole when it ends.
lanes=${LANES:-4}
run() { # N NAME SERVER DIR BIN [SERVER_DIR]
  local out="$log/run.$1" name=$2 server=$3 dir=$4 bin=$5 path=${6:-}
  echo "     Running $name${path:+ on $server} (${bin#"$PWD/"})" >"$out"
  (cd "$dir" && PATH="${path:+$path:}$PATH" "$bin" >>"$out" 2>&1) || echo "$name${path:+ on $server}" >>"$log/failed"
  flock "$log/all" sh -c 'cat "$1"; cat "$1" >>"$2"' - "$out" "$log/all"
}
running() {
  local started=$SECONDS n=0
  touch "$log/all"
  while read -r _ name server dir bin path; do
    while (($(jobs -rp | wc -l) >= lanes)); do wait -n || true; done
    n=$((n + 1))
    run "$n" "$name" "$server" "$dir" "$bin" "$path" &
  done <"$log/runs"
  wait
  echo "test.sh: $(wc -l <"$log/runs") test runs, $lanes side by side, took $((SECONDS - started)) s" >&2
}
running
step node --test ui/tests/
# No import circle, between the crates' modules or their files.
for crate in src src-tauri/src; do python3 scripts/module-cycles.py "$crate" --files; done
# The engines decide without I/O: nothing they import does any.
python3 scripts/engine-imports.py

echo "test.sh: the slowest test runs (seconds):" >&2
awk '/^     Running /{bin=$2 ($3=="on" ? " on " $4 : "")} /^test result:/{for(i=1;i<=NF;i++) if($i=="in"){sub("s","",$(i+1)); print $(i+1), bin}}' "$log/all" |
  sort -rn | head -8 >&2
if [[ -s $log/failed ]]; then
  echo "test.sh: these failed (their output above): $(paste -sd, "$log/failed" | sed 's/,/, /g')" >&2
  exit 1
fi
echo "test.sh: all passed" >&2
