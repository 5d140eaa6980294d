#!/usr/bin/env bash
# make test (and make bench): every Go test, unit and integration, with one OpenSearch node shared by the
# whole run (packages that need a node of their own start it themselves). The node is
# stopped by PID on exit, whatever the outcome.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT_DIR"

node="test-$$"

# A test binary that panics exits without running its clean-up, orphaning the etcd and
# kube-apiserver envtest started for it. Those orphans (our own binaries, parent gone) are
# stopped by PID when the run ends.
stop_orphaned_control_planes() {
  local pid exe pids=()
  for pid in $(pgrep -P 1 -f "$BIN_DIR/k8s/" 2>/dev/null); do
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
    case "$exe" in "$BIN_DIR"/k8s/*) log "stopping orphaned $(basename "$exe") (pid $pid)"; pids+=("$pid") ;; esac
  done
  ((${#pids[@]})) || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  sleep 3
  kill -KILL "${pids[@]}" 2>/dev/null || true
}
trap 'bash hack/opensearch.sh destroy "$node" >/dev/null 2>&1 || true; stop_orphaned_control_planes' EXIT
started=$(bash hack/opensearch.sh start "$node")
printf '[opensearch] %s\n' "${started//$'\n'/$'\n'[opensearch] }"
VECTORPILOT_OPENSEARCH_URL=$(echo "$started" | sed -n 's/^url=//p')
export VECTORPILOT_OPENSEARCH_URL

# Arguments go to go test as they are; with none, every package.
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(./...)
go test -count=1 -timeout 60m "${args[@]}"
# With the whole run only: the Argo CD health checks, in a module of their own (test/argocd:
# Argo CD's Kubernetes libraries are older than the operator's), and the race detector over
# every package's tests that need no real part (-short).
if [ $# -eq 0 ]; then
  (cd test/argocd && go test -count=1 ./...)
  go test -race -short -count=1 ./...
fi
