#!/usr/bin/env bash
# Installs OpenSearch Benchmark (hack/requirements-osb.txt, every package pinned) into its
# own venv under bin/venv-osb: its dependency pins would fight those of bin/venv.
# Idempotent: skipped while the requirements are unchanged. Prints the venv's folder.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

venv="$BIN_DIR/venv-osb"
want=$(sha256sum "$ROOT_DIR/hack/requirements-osb.txt" | cut -d' ' -f1)
if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
  log "installing hack/requirements-osb.txt into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$ROOT_DIR/hack/requirements-osb.txt"
  echo "$want" >"$venv/.requirements.sha256"
fi
echo "$venv"
