#!/usr/bin/env bash
# lockwatch's benchmarks, one command: bash bench/run.sh [--quick] [--only faults,cost,tray]
# Builds the release binaries, the in-process driver and the empty Tauri tray
# app the tray's memory is compared with (bench/empty-tray), then runs bench/bench.py,
# which prints the table and writes bench/results/<date>.json. Takes ~10 min
# (--quick: ~5 min) plus the build. Never part of the tests: it prints figures.
# The faults keep every worker's log (its reaper's lines in it) under
# bench/results/runs/<time>/; --takeovers N (env BENCH_TAKEOVERS) kills the
# holder's worker N times in a row (default 5, --quick 3; 50 takes ~5 min more),
# --takeover-phase random|after-renewal|before-renewal|mid-look|busy|mixed when.
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages it needs beyond the tests' (python3-redis for the peers,
# python3-xlib to find the dashboard's window by its process).
source scripts/lib/install-missing.sh
install_missing redis-server xvfb dbus python3-dbus python3-gi python3-redis python3-xlib

# The tray and the empty app only when the tray section runs (--only without it skips them).
packages=(-p lockwatch)
if [[ " $* " != *" --only "* ]] || [[ "$*" == *tray* ]]; then
    packages+=(-p lockwatch-tray -p empty-tray)
fi
cargo build --release "${packages[@]}" --bins --example lockwatch-bench
PYTHONPATH=bench exec /usr/bin/python3 bench/bench.py "$@"
