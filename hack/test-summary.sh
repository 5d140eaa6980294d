#!/usr/bin/env bash
# hack/test-summary.sh PACKAGES EVENTS [CPU]: where a test run's time went, printed at the end
# of hack/test.sh. PACKAGES holds go test's closing line per package, one per line as
# "  12.3s  ok   path (step)"; EVENTS is a folder of gotestsum's event files, one per report;
# CPU, samples of the machine's CPU as "epoch busy total" jiffies, one a line, oldest first.
# Every list reads its whole input: under pipefail, head stopping early killed sort with
# SIGPIPE once the lines outgrew a pipe write, and a green run exited 141.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
packages=$1 events=$2 samples=${3:-/dev/null}

# first N prints the first N lines of its input and reads the rest.
first() { awk -v n="$1" 'NR <= n'; }

# busy_while REPORT PACKAGE TEST: the percentage of the cores' time busy from the test's
# start to its end (its run and closing events in REPORT), from the nearest samples
# around them; ? without samples that span it.
busy_while() {
  local span
  span=$(awk -v key="\"Package\":\"$2\",\"Test\":\"$3\"" '
    # {"Time":"2026-11-29T01:37:38.123456789Z","Action":"run",…: the time from the 10th character.
    function time_of(line) { line = substr(line, 10); return substr(line, 1, index(line, "\"") - 1) }
    start == "" && index($0, "\"Action\":\"run\"," key "}") { start = time_of($0) }
    start != "" && end == "" && (index($0, "\"Action\":\"pass\"," key ",") || index($0, "\"Action\":\"fail\"," key ",")) { end = time_of($0) }
    END { if (end != "") print start, end }' "$1")
  if [ -z "$span" ]; then echo "?"; return; fi
  awk -v from="$(date -d "${span% *}" +%s.%N)" -v to="$(date -d "${span#* }" +%s.%N)" '
    $1 <= from { b0 = $2; t0 = $3 }
    $1 >= to && b1 == "" { b1 = $2; t1 = $3 }
    END { if (t0 != "" && b1 != "" && t1 > t0) printf "%d\n", 100 * (b1 - b0) / (t1 - t0); else print "?" }' "$samples"
}

echo "slowest packages:"
sort -rn "$packages" | first 8 | sed 's/^/  /'
# Where the time goes inside them: gotestsum's reading of each step's events (a test's
# time includes its subtests'), its durations (1m51.4s) in seconds to sort across steps,
# and how busy the machine's cores were while the test ran: a test that waits (sleeps,
# polls, timeouts) leaves them idle, one that computes (JVMs starting, builds, load) not.
echo "slowest tests (and the machine's CPU busy while each ran):"
for report in "$events"/*.json; do
  # None when go test ran alone (benchmarks): the glob stays as written.
  [ ! -e "$report" ] || "$BIN_DIR/gotestsum" tool slowest --jsonfile "$report" --threshold 30s | sed "s|\$| $report|"
done | awk '{
  d = $3; t = 0
  if (match(d, /[0-9.]+h/)) t += 3600 * substr(d, RSTART, RLENGTH - 1)
  if (match(d, /[0-9.]+m/)) t += 60 * substr(d, RSTART, RLENGTH - 1)
  if (match(d, /[0-9.]+s$/)) t += substr(d, RSTART, RLENGTH - 1)
  printf "%.1f %s %s %s\n", t, $1, $2, $4
}' | sort -rn | first 12 | while read -r seconds pkg test report; do
  printf '  %8.1fs  %s %s  CPU %s %% busy\n' "$seconds" "$pkg" "$test" "$(busy_while "$report" "$pkg" "$test")"
done
