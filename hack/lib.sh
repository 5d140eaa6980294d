# Shared helpers for hack/ scripts. Sourced, not run.
ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$ROOT_DIR/bin}
mkdir -p "$BIN_DIR"

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# apt_download fetches a Debian package into the current folder; the package lists are
# refreshed once per machine when the first download cannot find the package.
apt_download() {
  apt-get download "$@" >/dev/null 2>&1 && return 0
  apt-get update -qq >/dev/null
  apt-get download "$@" >/dev/null
}
