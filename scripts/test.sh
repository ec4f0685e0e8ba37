#!/usr/bin/env bash
# The test command: installs what is missing, then runs every test of the
# workspace against real redis-server processes the tests start themselves,
# and the core tests again on each other server lockwatch supports.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-test-deps.sh
# lockwatch.exe and Wine, for tests/wine.rs.
bash scripts/build-windows.sh
cargo test --workspace --locked "$@"
node --test ui/tests/
# No import circle, between the crates' modules or their files.
for crate in src src-tauri/src; do python3 scripts/module-cycles.py "$crate" --files; done
# The engines decide without I/O: nothing they import does any.
python3 scripts/engine-imports.py

# Redis 6.2 and Valkey 8 and 9 (scripts/fetch-servers.sh), first on PATH.
# A test that needs what an older server lacks (ACL selectors, functions)
# says so and checks nothing there (`common::has_selectors`).
servers=$(bash scripts/fetch-servers.sh)
while read -r name dir _; do
  echo "== the core tests on $name ($dir)"
  PATH="$dir:$PATH" cargo test --locked --test worker --test status --test incidents --test acl --test sentinel
done <<<"$servers"
