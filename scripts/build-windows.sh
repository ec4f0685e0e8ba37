#!/usr/bin/env bash
# Builds the `lockwatch` command and the tray app for Windows
# (x86_64-pc-windows-gnu, linked by Debian's mingw-w64) and, beside them,
# the stand-in bcryptprimitives.dll that Wine 8 lacks (scripts/wine/), so
# that tests/wine.rs and src-tauri/tests/wine_tray.rs can run them under wine64.
# Installs what is missing first (idempotent: nothing is fetched when all is
# there); uses sudo when not root. A debug build (the tests only run it, and it
# builds fastest), or with --release the one scripts/package.sh ships. Makes
# the installers of the build too (packaging/windows/): lockwatch.msi, per
# user, and lockwatch-machine.msi, per computer.
# Honours CARGO_TARGET_DIR. Prints the .exe's path on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-pc-windows-gnu
profile=debug
release=()
if [ "${1:-}" = --release ]; then
  profile=release
  release=(--release)
fi
# The win32-threads C compiler is the one Rust's windows-gnu target links
# with; wine64 alone is the 64-bit loader (no wine32, no i386 multiarch).
source scripts/lib/install-missing.sh
install_missing gcc-mingw-w64-x86-64-win32 wine64 wixl msitools
command -v rustup >/dev/null || { echo "rustup not found: install Rust from https://rustup.rs first" >&2; exit 1; }
rustup target list --installed | grep -qx "$target" || rustup target add "$target" >&2
cargo build "${release[@]}" --locked --target "$target" -p lockwatch -p lockwatch-tray --bin lockwatch --bin lockwatch-tray >&2
out="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/$target/$profile"
# Only for Wine: Windows itself has bcryptprimitives.dll.
stub=scripts/wine/bcryptprimitives.c
if ! [ "$out/bcryptprimitives.dll" -nt "$stub" ]; then
  x86_64-w64-mingw32-gcc -shared -O2 -Wall -Wextra -o "$out/bcryptprimitives.dll" "$stub" -ladvapi32
fi
# A release build ships: without its symbols.
if [ "$profile" = release ]; then
  x86_64-w64-mingw32-strip "$out/lockwatch.exe" "$out/lockwatch-tray.exe"
fi
# The installers of these builds (scripts/package.sh ships the release ones).
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
win=packaging/windows
for scope in user machine; do
  msi="$out/lockwatch.msi"
  [ "$scope" = user ] || msi="$out/lockwatch-$scope.msi"
  # (wixl takes sources by relative path only.)
  wixl -a x64 -D Version="$version" -D Scope="$scope" -D Bin="$(realpath --relative-to=. "$out")" -D Icons=icons \
    -o "$msi" "$win/lockwatch.wxs"
  # What wixl cannot write: the Start Menu shortcut's AppUserModelID, and
  # per computer the system PATH entry with the actions that write and
  # remove it.
  # A rebuild of the same version replaces the installed one too, rather
  # than installing beside it (what WiX's AllowSameVersionUpgrades does):
  # the upgrade row's maximum version is inclusive (attribute 512).
  upgrade=$(mktemp -d)
  msiinfo export "$msi" Upgrade | awk -F'\t' 'BEGIN { OFS = "\t" } $7 ~ /^WIX_UPGRADE_DETECTED\r?$/ { $5 = $5 + 512 } { print }' \
    > "$upgrade/Upgrade.idt"
  tables=(-i "$win/MsiShortcutProperty.idt" -i "$upgrade/Upgrade.idt")
  if [ "$scope" = machine ]; then
    tables+=(-i "$win/Environment.idt"
      -q "INSERT INTO \`InstallExecuteSequence\` (\`Action\`, \`Sequence\`) VALUES ('RemoveEnvironmentStrings', 3300)"
      -q "INSERT INTO \`InstallExecuteSequence\` (\`Action\`, \`Sequence\`) VALUES ('WriteEnvironmentStrings', 5200)")
  fi
  msibuild "$msi" "${tables[@]}"
  rm -r "$upgrade"
done
echo "$out/lockwatch.exe"
