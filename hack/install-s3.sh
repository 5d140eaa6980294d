#!/usr/bin/env bash
# Installs moto's S3-compatible server (moto_server) in a Python venv under bin/venv.
# Idempotent: skipped when the pinned version is already installed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

MOTO_VERSION=5.2.5
venv="$BIN_DIR/venv"
stamp="$venv/.moto-$MOTO_VERSION"
if [ ! -f "$stamp" ]; then
  log "installing moto[server]==$MOTO_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION"
  touch "$stamp"
fi
echo "$venv/bin/moto_server"
