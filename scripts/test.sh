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

# Redis 6.2 and Valkey 8 and 9 (scripts/fetch-servers.sh), first on PATH.
# Redis 6.2 cannot keep a supervisor's writes to her own keys (no ACL
# selectors): her rules are read-only there, so the tests of her writes and
# of DEBUG (7.0+) are for the others.
servers=$(bash scripts/fetch-servers.sh)
while read -r name dir _; do
  skip=()
  if [[ $name == redis-6* ]]; then
    for t in a_supervisor_can_run_no_script a_supervisor_flips_their_own a_supervisor_says_they_are_on_it \
      the_cli_says_in_one_sentence_when_the_server_refuses a_supervisor_who_fills a_supervisor_is_refused_everything \
      a_supervisor_who_never_reads; do
      skip+=(--skip "$t")
    done
  fi
  echo "== the core tests on $name ($dir)"
  PATH="$dir:$PATH" cargo test --locked --test worker --test status --test incidents --test acl --test sentinel \
    -- "${skip[@]}"
done <<<"$servers"
