#!/usr/bin/env bash
# hack/test-summary.sh PACKAGES EVENTS: where a test run's time went, printed at the end of
# hack/test.sh. PACKAGES holds go test's closing line per package, one per line as
# "  12.3s  ok   path (step)"; EVENTS is a folder of gotestsum's event files, one per report.
# Every list reads its whole input: under pipefail, head stopping early killed sort with
# SIGPIPE once the lines outgrew a pipe write, and a green run exited 141.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
packages=$1 events=$2

# first N prints the first N lines of its input and reads the rest.
first() { awk -v n="$1" 'NR <= n'; }

echo "slowest packages:"
sort -rn "$packages" | first 8 | sed 's/^/  /'
# Where the time goes inside them: gotestsum's reading of each step's events (a test's
# time includes its subtests'), its durations (1m51.4s) in seconds to sort across steps.
echo "slowest tests:"
for report in "$events"/*.json; do
  # None when go test ran alone (benchmarks): the glob stays as written.
  [ ! -e "$report" ] || "$BIN_DIR/gotestsum" tool slowest --jsonfile "$report" --threshold 30s
done | awk '{
  d = $3; t = 0
  if (match(d, /[0-9.]+h/)) t += 3600 * substr(d, RSTART, RLENGTH - 1)
  if (match(d, /[0-9.]+m/)) t += 60 * substr(d, RSTART, RLENGTH - 1)
  if (match(d, /[0-9.]+s$/)) t += substr(d, RSTART, RLENGTH - 1)
  printf "%8.1fs  %s %s\n", t, $1, $2
}' | sort -rn | first 12 | sed 's/^/  /'
