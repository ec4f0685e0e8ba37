#!/usr/bin/env bash
# Builds the `lockwatch` command and the tray app for Windows
# (x86_64-pc-windows-gnu, linked by Debian's mingw-w64) and, beside them,
# the stand-in bcryptprimitives.dll that Wine 8 lacks (scripts/wine/), so
# that tests/wine.rs and src-tauri/tests/wine_tray.rs can run them under wine64.
# Installs what is missing first (idempotent: nothing is fetched when all is
# there); uses sudo when not root. A debug build: the tests only run it, and it
# builds fastest. Honours CARGO_TARGET_DIR. Prints the .exe's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-pc-windows-gnu
# The win32-threads C compiler is the one Rust's windows-gnu target links
# with; wine64 alone is the 64-bit loader (no wine32, no i386 multiarch).
packages=(gcc-mingw-w64-x86-64-win32 wine64)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
command -v rustup >/dev/null || { echo "rustup not found: install Rust from https://rustup.rs first" >&2; exit 1; }
rustup target list --installed | grep -qx "$target" || rustup target add "$target" >&2
cargo build --locked --target "$target" -p lockwatch --bin lockwatch -p lockwatch-tray >&2
out="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/$target/debug"
# Only for Wine: Windows itself has bcryptprimitives.dll.
stub=scripts/wine/bcryptprimitives.c
if ! [ "$out/bcryptprimitives.dll" -nt "$stub" ]; then
  x86_64-w64-mingw32-gcc -shared -O2 -Wall -Wextra -o "$out/bcryptprimitives.dll" "$stub" -ladvapi32
fi
echo "$out/lockwatch.exe"
