#!/usr/bin/env bash
# Installs nginx from Debian's package (unpacked, no system install) into bin/: the real
# TLS-terminating, authenticating server the tests put in front of a local node, standing in
# for the OpenSearch security plugin, which the reachable registries do not serve.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$BIN_DIR/nginx" ] && { echo "$BIN_DIR/nginx"; exit 0; }
log "installing nginx from Debian's nginx package"
tmp=$(mktemp -d)
(cd "$tmp" && apt_download nginx)
dpkg-deb -x "$tmp"/nginx_*.deb "$tmp/x"
cp "$tmp/x/usr/sbin/nginx" "$BIN_DIR/nginx.tmp"
mv "$BIN_DIR/nginx.tmp" "$BIN_DIR/nginx"
rm -rf "$tmp"
echo "$BIN_DIR/nginx"
