#!/usr/bin/env bash
# Installs a pinned requirements file into a venv under bin/ and prints the venv's folder:
#   install-python.sh                                   hack/requirements.txt → bin/venv
#   install-python.sh hack/requirements-osb.txt venv-osb  OpenSearch Benchmark in its own
#                                                       venv (its pins would fight bin/venv's)
# Idempotent: skipped while the requirements are unchanged since the last install.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

requirements="$ROOT_DIR/${1:-hack/requirements.txt}"
venv="$BIN_DIR/${2:-venv}"
want=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
  log "installing ${requirements#"$ROOT_DIR"/} into $venv"
  python3 -m venv "$venv"
  # stdout is the venv's path (callers read it): pip's output goes to stderr.
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements" >&2
  echo "$want" >"$venv/.requirements.sha256"
fi
echo "$venv"
