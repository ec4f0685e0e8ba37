#!/usr/bin/env bash
# Builds lockwatch's packages into dist/, needing nothing beyond the package
# registries (it installs what is missing, with sudo when not root):
#   lockwatch_<version>_amd64.deb          the CLI and the worker's systemd
#                                          template unit, for job servers
#   lockwatch-desktop_<version>_amd64.deb  the tray app and dashboard, for
#                                          supervisors' desktops (needs the first)
#   lockwatch-<version>-x64.msi            both for Windows, installed per user
#   lockwatch-<version>-x64-machine.msi    the same, per computer (an admin's)
#                                          (cross-built, scripts/build-windows.sh)
# Release builds, stripped; Depends from the binaries' libraries
# (dpkg-shlibdeps), plus what is loaded at run time and no tool finds.
# With --debug: the two .debs from the debug builds the tests already made
# (stripped too, so the same packages but for speed; no .msi, which
# tests/wine.rs installs from the debug build): CI tries these in a clean
# Debian root (scripts/try-debs.sh) without a second, release build.
# lintian's one remaining note: no manual pages (`lockwatch --help` and
# each command's --help are the reference; the tray app is a desktop app).
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release
case "${1:-}" in
  "") ;;
  --debug) profile=debug ;;
  *) echo "usage: bash scripts/package.sh [--debug]" >&2; exit 2 ;;
esac
source scripts/lib/install-missing.sh
install_missing dpkg-dev fakeroot
bash scripts/setup-test-deps.sh --run >/dev/null

version=$(cargo metadata --no-deps --format-version 1 | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "lockwatch"))')
arch=$(dpkg --print-architecture)
build=(--release)
[ "$profile" = debug ] && build=()
cargo build "${build[@]}" --locked -p lockwatch --bin lockwatch -p lockwatch-tray --bin lockwatch-tray >&2
target="${CARGO_TARGET_DIR:-target}/$profile"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p dist

# The Depends of `binaries`, as dpkg-shlibdeps finds them (it wants a debian/ dir).
shlibs() {
  mkdir -p "$work/shlibs/debian"
  printf 'Source: lockwatch\n\nPackage: lockwatch\nArchitecture: any\n' >"$work/shlibs/debian/control"
  (cd "$work/shlibs" && dpkg-shlibdeps -O "$@" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
}

# control FILE fields…: writes DEBIAN/control.
package() {
  local root=$1 name=$2 depends=$3 description=$4
  local size
  size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
  cat >"$root/DEBIAN/control" <<CONTROL
Package: $name
Version: $version
Architecture: $arch
Maintainer: lockwatch maintainers <maintainers@lockwatch.invalid>
Installed-Size: $size
Depends: $depends
Section: admin
Priority: optional
Homepage: https://github.com/lockwatch/lockwatch
Description: $description
CONTROL
  # A debug build is large: quicker compression, as it is only tried.
  local compress=()
  [ "$profile" = debug ] && compress=(-Zgzip -z1)
  fakeroot dpkg-deb "${compress[@]}" --root-owner-group --build "$root" "dist/${name}_${version}_${arch}.deb" >&2
}

# README and its pages, changelog and copyright (the machine-readable format lintian reads).
docs() {
  local root=$1 name=$2 doc="$1/usr/share/doc/$2"
  install -d "$doc"
  install -m 0644 README.md "$doc/README.md"
  install -d "$doc/docs"
  install -m 0644 docs/*.md "$doc/docs/"
  printf '%s (%s) unstable; urgency=medium\n\n  * Built by scripts/package.sh from commit %s.\n\n -- lockwatch maintainers <maintainers@lockwatch.invalid>  %s\n' \
    "$name" "$version" "$(git rev-parse --short HEAD)" "$(date -R -d "@$(git log -1 --format=%ct)")" | gzip -9n >"$doc/changelog.gz"
  cat >"$doc/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: lockwatch
Source: https://github.com/lockwatch/lockwatch

Files: *
Copyright: 2026 lockwatch maintainers
License: MIT or Apache-2.0

License: MIT
 Permission is hereby granted, free of charge, to any person obtaining a copy
 of this software and associated documentation files (the "Software"), to deal
 in the Software without restriction, including without limitation the rights
 to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 copies of the Software, and to permit persons to whom the Software is
 furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in
 all copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 SOFTWARE.

License: Apache-2.0
 On Debian systems, the full text of the Apache License, Version 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
COPYRIGHT
}

# The CLI and the worker's unit.
server="$work/lockwatch"
install -d "$server/DEBIAN" "$server/usr/bin" "$server/usr/lib/systemd/system" "$server/usr/lib/sysusers.d"
install -s -m 0755 "$target/lockwatch" "$server/usr/bin/lockwatch"
install -m 0644 "packaging/server/lockwatch-worker@.service" "packaging/server/lockwatch-serve@.service" "$server/usr/lib/systemd/system/"
install -m 0644 packaging/server/lockwatch.sysusers "$server/usr/lib/sysusers.d/lockwatch.conf"
install -m 0755 packaging/server/postinst packaging/server/prerm packaging/server/postrm "$server/DEBIAN/"
docs "$server" lockwatch
install -m 0644 packaging/server/example.env packaging/server/example.robots.toml "$server/usr/share/doc/lockwatch/"
install -D -m 0644 -t "$server/usr/share/doc/lockwatch/prometheus" packaging/prometheus/lockwatch.rules.yml packaging/prometheus/lockwatch.rules.test.yml
package "$server" lockwatch "$(shlibs "$server/usr/bin/lockwatch"), adduser, procps" \
  "run a job on exactly one server, and see whether it runs
 lockwatch watches a job guarded by a Redisson-style Redis lock: which
 server runs it, whether it hung, who has it enabled. Its worker runs any
 command on exactly one server of a cluster (lockwatch-worker@<job>)."

# The tray app, its dashboard and menu entry. tray-icon loads
# libayatana-appindicator3 at run time (dlopen): no tool finds it.
desktop="$work/lockwatch-desktop"
install -d "$desktop/DEBIAN" "$desktop/usr/bin" "$desktop/usr/share/applications"
install -s -m 0755 "$target/lockwatch-tray" "$desktop/usr/bin/lockwatch-tray"
install -m 0644 packaging/desktop/lockwatch.desktop "$desktop/usr/share/applications/"
for size in 32 128 256; do
  src=icons/32x32.png
  [ "$size" = 128 ] && src=icons/128x128.png
  [ "$size" = 256 ] && src=icons/128x128@2x.png
  install -D -m 0644 "$src" "$desktop/usr/share/icons/hicolor/${size}x${size}/apps/lockwatch.png"
done
docs "$desktop" lockwatch-desktop
install -m 0644 packaging/desktop/settings.example.json "$desktop/usr/share/doc/lockwatch-desktop/"
install -m 0755 packaging/desktop/prerm packaging/desktop/postrm "$desktop/DEBIAN/"
# A Chinese font: the example defaults set "zh-CN" for a whole site, and
# without one Chinese shows as empty boxes (the small one first).
package "$desktop" lockwatch-desktop \
  "$(shlibs "$desktop/usr/bin/lockwatch-tray"), libayatana-appindicator3-1, procps, fonts-wqy-microhei | fonts-noto-cjk | fonts-wqy-zenhei, lockwatch (= $version)" \
  "job state in the tray, own enable flag, failover notices
 The lockwatch tray app: an icon for the job's state (running, pending,
 stale, down, stopped, conflict, unknown), your own enable flag in its
 menu, a notification when the job dies or moves, and a dashboard."

# Windows: the same programs cross-built, and their installers.
if [ "$profile" = release ]; then
  built=$(dirname "$(bash scripts/build-windows.sh --release)")
  cp "$built/lockwatch.msi" "dist/lockwatch-${version}-x64.msi"
  cp "$built/lockwatch-machine.msi" "dist/lockwatch-${version}-x64-machine.msi"
fi

ls -l dist/
