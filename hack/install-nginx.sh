#!/usr/bin/env bash
# Installs nginx from Debian's package (unpacked, no system install) into bin/: the real
# TLS-terminating, authenticating server the tests put in front of a local node, standing in
# for the OpenSearch security plugin, which the reachable registries do not serve.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
deb_binary nginx usr/sbin/nginx "$BIN_DIR/nginx"
echo "$BIN_DIR/nginx"
