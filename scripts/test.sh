#!/usr/bin/env bash
# The test command: installs what is missing, then runs every test of the
# workspace against real redis-server processes the tests start themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-test-deps.sh
cargo test --workspace --locked "$@"
node --test ui/tests/
