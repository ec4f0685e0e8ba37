#!/usr/bin/env bash
# Builds lockwatch's packages into dist/, needing nothing beyond the package
# registries (it installs what is missing, with sudo when not root):
#   lockwatch_<version>_amd64.deb          the CLI and the worker's systemd
#                                          template unit, for job servers
#   lockwatch-desktop_<version>_amd64.deb  the tray app and dashboard, for
#                                          supervisors' desktops (needs the first)
# Release builds; Depends from the binaries' libraries (dpkg-shlibdeps), plus
# what is loaded at run time and no tool finds.
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
needed=(dpkg-dev fakeroot)
missing=()
for p in "${needed[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
bash scripts/setup-test-deps.sh --run >/dev/null

version=$(cargo metadata --no-deps --format-version 1 | python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "lockwatch"))')
arch=$(dpkg --print-architecture)
cargo build --release --locked -p lockwatch --bin lockwatch -p lockwatch-tray --bin lockwatch-tray >&2
target="${CARGO_TARGET_DIR:-target}/release"
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
  fakeroot dpkg-deb --root-owner-group --build "$root" "dist/${name}_${version}_${arch}.deb" >&2
}

docs() {
  local root=$1 name=$2
  install -d "$root/usr/share/doc/$name"
  install -m 0644 README.md "$root/usr/share/doc/$name/README.md"
  printf 'lockwatch\nLicense: MIT OR Apache-2.0\n' >"$root/usr/share/doc/$name/copyright"
}

# The CLI and the worker's unit.
server="$work/lockwatch"
install -d "$server/DEBIAN" "$server/usr/bin" "$server/usr/lib/systemd/system" "$server/usr/lib/sysusers.d"
install -m 0755 "$target/lockwatch" "$server/usr/bin/lockwatch"
install -m 0644 "packaging/server/lockwatch-worker@.service" "$server/usr/lib/systemd/system/"
install -m 0644 packaging/server/lockwatch.sysusers "$server/usr/lib/sysusers.d/lockwatch.conf"
install -m 0755 packaging/server/postinst packaging/server/postrm "$server/DEBIAN/"
docs "$server" lockwatch
install -m 0644 packaging/server/example.env "$server/usr/share/doc/lockwatch/example.env"
package "$server" lockwatch "$(shlibs "$server/usr/bin/lockwatch"), adduser" \
  "run a job on exactly one server, and see whether it runs
 lockwatch watches a job guarded by a Redisson-style Redis lock: which
 server runs it, whether it hung, who has it enabled. Its worker runs any
 command on exactly one server of a cluster (lockwatch-worker@<job>)."

# The tray app, its dashboard and menu entry. tray-icon loads
# libayatana-appindicator3 at run time (dlopen): no tool finds it.
desktop="$work/lockwatch-desktop"
install -d "$desktop/DEBIAN" "$desktop/usr/bin" "$desktop/usr/share/applications"
install -m 0755 "$target/lockwatch-tray" "$desktop/usr/bin/lockwatch-tray"
install -m 0644 packaging/desktop/lockwatch.desktop "$desktop/usr/share/applications/"
for size in 32 128 256; do
  src=icons/32x32.png
  [ "$size" = 128 ] && src=icons/128x128.png
  [ "$size" = 256 ] && src=icons/128x128@2x.png
  install -D -m 0644 "$src" "$desktop/usr/share/icons/hicolor/${size}x${size}/apps/lockwatch.png"
done
docs "$desktop" lockwatch-desktop
package "$desktop" lockwatch-desktop \
  "$(shlibs "$desktop/usr/bin/lockwatch-tray"), libayatana-appindicator3-1, lockwatch (= $version)" \
  "the job's state in the tray, your own enable flag, failover notices
 The lockwatch tray app: an icon for the job's state (running, pending,
 stale, down, stopped, conflict, unknown), your own enable flag in its
 menu, a notification when the job dies or moves, and a dashboard."

ls -l dist/*.deb
