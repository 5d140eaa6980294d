#!/usr/bin/env bash
# Installs promtool from Debian's prometheus package (unpacked, no system install) into bin/.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$BIN_DIR/promtool" ] && { echo "$BIN_DIR/promtool"; exit 0; }
log "installing promtool from Debian's prometheus package"
tmp=$(mktemp -d)
(cd "$tmp" && apt_download prometheus)
dpkg-deb -x "$tmp"/prometheus_*.deb "$tmp/x"
cp "$tmp/x/usr/bin/promtool" "$BIN_DIR/promtool"
rm -rf "$tmp"
echo "$BIN_DIR/promtool"
