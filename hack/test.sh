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
# The run's processes share one CPU cgroup of weight 1024, as a host's processes share
# systemd's slices, beside the e2e sandbox node's (test/harness/kubenode weighs it as kubelet
# weighs kubepods): at the root of cgroup v1 every busy thread of a test weighs 1024 on
# its own, and the tests running beside the e2e package starved its pods. Without a
# writable cgroup v1 cpu hierarchy the run stays where it is. Slices left by a run that
# crashed are removed once empty.
cpu_cgroup=/sys/fs/cgroup/cpu
test_slice=""
enter_test_slice() {
  [ -w "$cpu_cgroup/cgroup.procs" ] && [ -f "$cpu_cgroup/cpu.shares" ] || return 0
  local d
  for d in "$cpu_cgroup"/vectorpilot-tests-*; do
    if [ -d "$d" ] && [ -z "$(cat "$d/cgroup.procs")" ]; then rmdir "$d" 2>/dev/null || true; fi
  done
  test_slice="$cpu_cgroup/vectorpilot-tests-$$"
  if ! { mkdir -p "$test_slice" && echo 1024 >"$test_slice/cpu.shares" && echo $$ >"$test_slice/cgroup.procs"; }; then
    log "could not run the tests in CPU cgroup $test_slice; they run where they are"
    test_slice=""
  fi
}
leave_test_slice() {
  [ -n "$test_slice" ] || return 0
  echo $$ >"$cpu_cgroup/cgroup.procs"
  # A process the run stopped may still be exiting (the CPU sampler's last sleep).
  local _
  for _ in 1 2 3; do
    rmdir "$test_slice" 2>/dev/null && return 0
    sleep 1
  done
  log "could not remove CPU cgroup $test_slice; the next run removes it once empty"
}
# What the run leaves on the machine goes on exit, whatever the outcome; its scratch files too.
scratch=()
sampler=""
clean_up() {
  [ -z "$sampler" ] || kill "$sampler" 2>/dev/null || true
  # go test's events and the CPU samples stay beside the JUnit reports, for a closer look
  # at where the time went (gotestsum tool slowest --jsonfile bin/test-results/e2e.json).
  if [ -n "${events:-}" ] && [ -d "$BIN_DIR/test-results" ]; then
    cp "$events"/*.json "$BIN_DIR/test-results/" 2>/dev/null || true
    cp "$cpu_samples" "$BIN_DIR/test-results/cpu-samples" 2>/dev/null || true
  fi
  rm -rf "${scratch[@]}"
  bash hack/opensearch.sh destroy "$node" >/dev/null 2>&1 || true
  stop_orphaned_control_planes
  leave_test_slice
}
enter_test_slice
trap clean_up EXIT

rc=0
steps=()
output=$(mktemp)
packages=$(mktemp)
events=$(mktemp -d)
cpu_samples=$(mktemp)
scratch+=("$output" "$packages" "$events" "$cpu_samples")

# A sample a second, for the slowest tests' share (hack/test-summary.sh): "epoch busy total".
sample_cpu() { while :; do echo "$EPOCHREALTIME $(cpu_jiffies)"; sleep 1; done; }
sample_cpu >"$cpu_samples" &
sampler=$!

# gotest runs go test through gotestsum, its JUnit report in bin/test-results/<report>.xml:
# a line per test as it ends and a summary — or go test -v's own output when the
# arguments ask for it (-v: the measurements tests log) — then go test's closing line per
# package, read from the events gotestsum recorded (kept per report for the slowest tests
# at the end).
gotest() {
  local report=$1 format=testname status=0 arg
  shift
  for arg in "$@"; do
    case "$arg" in
      # gotestsum reports every benchmark as failed, "(unknown)", however it ended: go test
      # -json gives a benchmark a run event and no pass (gotestsum#332). Benchmarks go
      # through go test alone, which prints their measurements and its closing lines.
      -bench | -bench=* | -test.bench | -test.bench=*)
        go test "$@"
        return
        ;;
      -v | -test.v) format=standard-verbose ;;
    esac
  done
  "$BIN_DIR/gotestsum" --format "$format" --jsonfile "$events/$report.json" --junitfile "$BIN_DIR/test-results/$report.xml" -- "$@" || status=$?
  [ "$format" = standard-verbose ] || sed -nE 's/.*"Output":"((ok|FAIL) *\\t[^"]*)\\n".*/\1/p' "$events/$report.json" | sed 's/\\t/\t/g'
  return "$status"
}
step() {
  local name=$1 start=$SECONDS cpu_before status=0
  shift
  cpu_before=$(cpu_jiffies)
  "$@" 2>&1 | tee "$output" || status=$?
  steps+=("$(printf '%-30s %6ds  CPU %3s %% busy' "$name" $((SECONDS - start)) "$(busy_share "$cpu_before" "$(cpu_jiffies)")")")
  [ "$status" -eq 0 ] || steps[-1]+=" (failed)"
  # go test's closing line per package: "ok  <TAB>path<TAB>12.3s", or FAIL.
  awk -F'\t' -v step="$name" '$1 ~ /^(ok|FAIL) *$/ && $3 ~ /s$/ { t = $3; sub(/s$/, "", t); printf "%8.1fs  %-4s %s (%s)\n", t, $1, $2, step }' "$output" >>"$packages"
  return "$status"
}
# in_module runs a command in a module outside the workspace (test/argocd).
in_module() { (cd "$1" && shift && GOWORK=off "$@"); }
# unit_only runs a command without VECTORPILOT_INTEGRATION: the unit tests alone.
unit_only() { (unset VECTORPILOT_INTEGRATION && "$@"); }
# report prints where the run's time went: each step's wall time and the slowest packages
# and tests. It reports; it never decides the run's outcome.
report() {
  echo
  echo "time by step:"
  printf '  %s\n' "${steps[@]}"
  bash hack/test-summary.sh "$packages" "$events" "$cpu_samples" || log "the summary failed (exit $?); the tests' outcome stands"
}

# With no arguments (make test, CI): the set-up first, each phase a step, so that the report
# says what a cold machine spends installing beside what the tests take. A part that cannot
# be installed ends the run there; lint findings fail it after the tests ran.
if [ $# -eq 0 ]; then
  # Each real part's time (hack/part.sh), listed under its phase.
  VECTORPILOT_PART_TIMES=$(mktemp)
  scratch+=("$VECTORPILOT_PART_TIMES")
  export VECTORPILOT_PART_TIMES
  for phase in tools real-parts; do
    status=0
    step "set-up: make $phase" make --no-print-directory "$phase" || status=$?
    mapfile -t -O "${#steps[@]}" steps < <(sed 's/^/  /' "$VECTORPILOT_PART_TIMES")
    : >"$VECTORPILOT_PART_TIMES"
    if [ "$status" -ne 0 ]; then
      report
      die "make $phase failed; no test ran"
    fi
  done
  step "lint" make --no-print-directory lint || rc=1
fi
install_go_tool gotestsum gotest.tools/gotestsum "$GOTESTSUM_VERSION"
mkdir -p "$BIN_DIR/test-results"

started=$(bash hack/opensearch.sh start "$node")
printf '[opensearch] %s\n' "${started//$'\n'/$'\n'[opensearch] }"
VECTORPILOT_OPENSEARCH_URL=$(echo "$started" | sed -n 's/^url=//p')
VECTORPILOT_OPENSEARCH_PID=$(echo "$started" | sed -n 's/^pid=//p')
export VECTORPILOT_OPENSEARCH_URL VECTORPILOT_OPENSEARCH_PID
# Integration and e2e tests run here; plain `go test ./...` runs the unit tests only
# (internal/harness/testgate).
export VECTORPILOT_INTEGRATION=1
# The tests are a module of their own (test/go.mod: Helm, kubeconform, go-containerregistry
# stay out of the operator's go.mod). A workspace of both lets one go test take packages of
# each (./... and ./test/...) and schedule them together; it selects the operator's own
# versions (test/modules_test.go: TestTestsBuildTheOperatorAsShipped).
# The file sits in a folder of its own: the go command looks for a go.work in every parent
# of the folder it runs in, and the scripts build other modules under bin/.
mkdir -p "$BIN_DIR/workspace"
printf 'go %s\n\nuse (\n\t%s\n\t%s\n)\n' "$(go mod edit -json | sed -n 's/^\t"Go": "\(.*\)",$/\1/p')" "$ROOT_DIR" "$ROOT_DIR/test" >"$BIN_DIR/workspace/go.work"
export GOWORK="$BIN_DIR/workspace/go.work"

# Arguments go to go test as they are. With none: every package, the e2e package after
# the others, on the machine alone. It runs a real node with three OpenSearch JVMs under a
# query load on this machine's cores; beside the controllers' integration tests (their own
# OpenSearch nodes, S3, envtest) its pods got 0.2 cores each and the rolling-restart tests
# timed queries out while the operator stopped one pod at a time and none while a holder of
# its copies was down (docs/managed-clusters.md, rolling restarts). The finding stays reproducible:
# VECTORPILOT_E2E_CPU_HOG=1, or hack/test.sh ./controllers beside hack/test.sh ./test/e2e.
# Every step runs; the run fails if any did. At the end, where the time went: each step's
# wall time and the slowest packages (go test's own closing lines stay, above).
if [ $# -gt 0 ]; then
  step "go test" gotest go-test -count=1 -timeout 60m "$@" || rc=1
else
  mapfile -t others < <(go list ./... ./test/... | grep -v '/test/e2e$')
  # -parallel: the tests that mostly wait (controllers' waitsMostly) run side by side, more
  # of them than the two cores go test would allow by default.
  step "packages but test/e2e" gotest packages -count=1 -parallel 8 -timeout 60m "${others[@]}" || rc=1
  step "test/e2e (the real node)" gotest e2e -count=1 -timeout 60m ./test/e2e || rc=1
  # The Argo CD health checks, in a module of their own (test/argocd: Argo CD's Kubernetes
  # libraries are older than the operator's), and the race detector over the unit tests:
  # plain go test, without VECTORPILOT_INTEGRATION.
  step "test/argocd" in_module test/argocd gotest argocd -count=1 ./... || rc=1
  step "race detector (unit tests)" unit_only gotest race -race -count=1 ./... ./test/... || rc=1
fi
report
[ "$rc" -eq 0 ]
