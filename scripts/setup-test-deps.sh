#!/usr/bin/env bash
# Installs the system packages lockwatch's build and tests need (idempotent:
# nothing is fetched when all are present). Uses sudo when not root.
# `--run`: only what the main command (scripts/run.sh) needs to build and run
# (with a Chinese font: the app speaks Chinese on a zh_CN desktop).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/install-missing.sh"
packages=(
  build-essential pkg-config libssl-dev
  libwebkit2gtk-4.1-dev libayatana-appindicator3-dev librsvg2-dev libxdo-dev libdbus-1-dev
  redis-server redis-tools
  fonts-wqy-microhei
)
tests=true
[ "${1:-}" = "--run" ] && tests=false
if $tests; then
  packages+=(
    redis-sentinel openssl
    xvfb dbus-x11 dbus python3-dbus python3-dbusmock python3-gi gir1.2-gdkpixbuf-2.0 webkit2gtk-driver
    trayer x11-utils xdotool python3-xlib
    gcc-mingw-w64-x86-64-win32 wine64 wixl msitools
    systemd locales
    prometheus
  )
fi
# The dashboard's page logic is tested with node's own test runner.
$tests && { command -v node >/dev/null || packages+=(nodejs); }
# npm installs node-redisson (below); Debian's nodejs package comes without it.
$tests && { command -v npm >/dev/null || packages+=(npm); }
install_missing "${packages[@]}"
# redis-server's package starts a system instance on 6379; lockwatch never uses it.
command -v cargo >/dev/null || { echo "cargo not found: install Rust from https://rustup.rs first" >&2; exit 1; }
$tests || exit 0
# The desktops the end-to-end tests play (English, Chinese) have their locales,
# as a real one does: GTK then speaks them instead of falling back to C.
for loc in en_US zh_CN; do
  if ! locale -a 2>/dev/null | grep -qix "$loc.utf8"; then
    as_root sed -i "s/^# *\($loc.UTF-8 UTF-8\)/\1/" /etc/locale.gen
    grep -q "^$loc.UTF-8 UTF-8" /etc/locale.gen || echo "$loc.UTF-8 UTF-8" | as_root tee -a /etc/locale.gen >/dev/null
    generate=true
  fi
done
if [ -n "${generate:-}" ]; then as_root locale-gen >/dev/null; fi
# node-redisson 1.0.4, a real Redisson implementation, holds the lock in
# tests/redisson.rs; the lockfile pins it and the Redis client it loads.
redisson_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/redisson" && pwd)"
if ! [ -d "$redisson_dir/node_modules/node-redisson" ]; then
  echo "installing node-redisson for tests/redisson.rs (npm ci)"
  (cd "$redisson_dir" && npm ci --no-audit --no-fund --ignore-scripts)
fi
# tauri-driver drives the dashboard's real webview in the end-to-end test.
cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
if ! [ -x "$cargo_bin/tauri-driver" ] && ! command -v tauri-driver >/dev/null; then
  echo "installing tauri-driver (cargo install, about a minute)"
  cargo install tauri-driver --locked
fi
