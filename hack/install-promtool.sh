#!/usr/bin/env bash
# Installs promtool and the Prometheus server from Debian's prometheus package (unpacked, no
# system install) into bin/: promtool checks and unit-tests the alert rules, the server
# scrapes the operator and runs every dashboard query and alert in test/observability.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
deb_binary prometheus usr/bin/promtool "$BIN_DIR/promtool"
deb_binary prometheus usr/bin/prometheus "$BIN_DIR/prometheus"
echo "$BIN_DIR/promtool"
