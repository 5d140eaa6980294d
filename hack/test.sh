#!/usr/bin/env bash
# make test (and make bench): every Go test, unit and integration, with one OpenSearch node shared by the
# whole run (packages that need a node of their own start it themselves). The node is
# stopped by PID on exit, whatever the outcome.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT_DIR"

node="test-$$"
trap 'bash hack/opensearch.sh destroy "$node" >/dev/null 2>&1 || true' EXIT
started=$(bash hack/opensearch.sh start "$node")
echo "$started" | sed 's/^/[opensearch] /'
VECTORPILOT_OPENSEARCH_URL=$(echo "$started" | sed -n 's/^url=//p')
export VECTORPILOT_OPENSEARCH_URL

# Arguments go to go test as they are; with none, every package.
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(./...)
go test -count=1 -timeout 60m "${args[@]}"
