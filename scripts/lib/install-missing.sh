# Sourced, not run (`source scripts/lib/install-missing.sh`): the one way
# lockwatch's scripts install the Debian packages they need.
#   install_missing PACKAGE…  installs those of the packages that are not
#                             installed yet, after an `apt-get update`;
#                             idempotent: when all are there it fetches
#                             nothing and runs no apt-get.
#   as_root COMMAND…          runs a command as root: itself when root
#                             already, else through sudo.
# Both speak on stderr only, so a script's stdout stays its result (a path,
# a list of servers).

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  else
    sudo "$@"
  fi
}

install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "installing: ${missing[*]}" >&2
  as_root apt-get update -qq >&2
  # Through env: sudo does not pass the caller's environment on.
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}
