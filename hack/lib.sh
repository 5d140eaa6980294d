# shellcheck shell=bash
# Shared helpers for hack/ scripts. Sourced, not run.
ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=${BIN_DIR:-$ROOT_DIR/bin}
mkdir -p "$BIN_DIR"
# The scripts build modules of their own (Kubernetes, Argo, OpenSearch's tools) and the
# operator as its Dockerfile does: never in a workspace (hack/test.sh sets its tests' own
# after sourcing this).
export GOWORK=off

# The pinned versions (hack/versions.env), unless the environment sets one.
while IFS='=' read -r key value; do
  [[ $key =~ ^[A-Z][A-Z0-9_]*$ ]] || continue
  [ -n "${!key:-}" ] || export "$key=$value"
done < "$ROOT_DIR/hack/versions.env"

log() { printf '[%s] %s\n' "$(basename "$0")" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Whether a step or a test waited or computed: the machine's CPU, from /proc/stat's first
# line, as "busy total" jiffies (busy: everything but idle and iowait; total: all of it).
cpu_jiffies() {
  local _ user nice system idle iowait irq softirq steal
  read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
  echo "$((user + nice + system + irq + softirq + steal)) $((user + nice + system + idle + iowait + irq + softirq + steal))"
}
# busy_share "BUSY TOTAL" "BUSY TOTAL": the percentage of the cores' time busy in between.
busy_share() {
  local b0 t0 b1 t1
  read -r b0 t0 <<<"$1"
  read -r b1 t1 <<<"$2"
  ((t1 > t0)) && echo "$((100 * (b1 - b0) / (t1 - t0)))" || echo "?"
}
# install_go_tool installs a pinned Go command into bin/ unless that version is there; the
# arguments after the version go to go install.
install_go_tool() {
  local name=$1 pkg=$2 version=$3 stamp="$BIN_DIR/.$1.version"
  shift 3
  if [ -x "$BIN_DIR/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then return 0; fi
  log "installing $name $version"
  GOBIN="$BIN_DIR" GOFLAGS='' go install "$@" "$pkg@$version"
  echo "$version" >"$stamp"
}

# apt_download fetches a Debian package into the current folder; the package lists are
# refreshed once per machine when the first download cannot find the package.
apt_download() {
  apt-get download "$@" >/dev/null 2>&1 && return 0
  apt-get update -qq >/dev/null
  apt-get download "$@" >/dev/null
}

# apt_install installs the Debian packages not installed yet; the package lists are
# refreshed once when the first attempt cannot find one.
apt_install() {
  local p missing=()
  for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]} from Debian's packages"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# deb_binary copies one file out of a Debian package, without a system install, to dest
# (written whole or not at all); nothing is done when dest exists.
deb_binary() {
  local package=$1 path=$2 dest=$3
  [ -x "$dest" ] && return 0
  log "installing $(basename "$dest") from Debian's $package package"
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && apt_download "$package")
  dpkg-deb -x "$tmp/${package}"_*.deb "$tmp/x"
  cp "$tmp/x/$path" "$dest.tmp"
  mv "$dest.tmp" "$dest"
  rm -rf "$tmp"
}

# module_source copies a Go module's source from the module proxy into dest, writable: for
# builds that must change it first (a symlink the module zip dropped, a replace directive
# naming a nested module the zip leaves out).
module_source() {
  local module=$1 version=$2 dest=$3 dir
  dir=$(cd "$ROOT_DIR" && GOFLAGS=-mod=mod go mod download -json "$module@$version" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || die "go mod download $module@$version gave no folder"
  cp -r "$dir/." "$dest" && chmod -R u+w "$dest"
}
