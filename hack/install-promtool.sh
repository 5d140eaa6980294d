#!/usr/bin/env bash
# Installs promtool from Debian's prometheus package (unpacked, no system install) into bin/.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
deb_binary prometheus usr/bin/promtool "$BIN_DIR/promtool"
echo "$BIN_DIR/promtool"
