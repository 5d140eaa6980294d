#!/usr/bin/env bash
# hack/part.sh NAME COMMAND...: runs one real part's installer (make real-parts). When
# VECTORPILOT_PART_TIMES names a file (hack/test.sh sets it), appends the part's wall time
# and how busy the cores were meanwhile: a part that leaves them idle waits on the
# network (downloads), one that keeps them busy compiles. The command's outcome is the
# script's.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
name=$1
shift
[ -n "${VECTORPILOT_PART_TIMES:-}" ] || exec "$@"
start=$SECONDS
cpu_before=$(cpu_jiffies)
status=0
"$@" || status=$?
line=$(printf '%-28s %6ds  CPU %3s %% busy' "$name" $((SECONDS - start)) "$(busy_share "$cpu_before" "$(cpu_jiffies)")")
[ "$status" -eq 0 ] || line+=" (failed)"
echo "$line" >>"$VECTORPILOT_PART_TIMES"
exit "$status"
