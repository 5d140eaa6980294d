#!/usr/bin/env bash
# Installs moto's S3-compatible server (moto_server) with the project's Python tools and
# prints its path.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
venv=$(bash "$ROOT_DIR/hack/install-python.sh")
echo "$venv/bin/moto_server"
