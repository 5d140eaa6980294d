#!/usr/bin/env bash
# Installs hack/requirements.txt into a venv under bin/venv. Idempotent: skipped while the
# requirements are unchanged since the last install. Prints the venv's folder.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

venv="$BIN_DIR/venv"
want=$(sha256sum "$ROOT_DIR/hack/requirements.txt" | cut -d' ' -f1)
if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
  log "installing hack/requirements.txt into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$ROOT_DIR/hack/requirements.txt"
  echo "$want" >"$venv/.requirements.sha256"
fi
echo "$venv"
