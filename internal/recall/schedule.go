package recall

import (
	"fmt"
	"time"
)

// RetryAfterSkip is the longest wait after a skipped measurement: a skip's cause (an empty
// or red index, busy nodes) often passes long before the next interval would come.
const RetryAfterSkip = time.Minute

// Last is what status remembers of the previous attempt.
type Last struct {
	MeasuredAt, SkippedAt time.Time
	// Generation is the spec generation the last attempt ran under.
	Generation int64
}

// Due says whether a measurement is due at now and, when not, how long until it is. One
// is due when none was attempted, when the spec changed since the last attempt (a new
// efSearch is measured at once), and when interval has passed since the last measurement,
// or min(interval, RetryAfterSkip) since a later skip.
func Due(last Last, generation int64, interval time.Duration, now time.Time) (bool, time.Duration) {
	if last.MeasuredAt.IsZero() && last.SkippedAt.IsZero() || last.Generation != generation {
		return true, 0
	}
	next := last.MeasuredAt.Add(interval)
	if last.SkippedAt.After(last.MeasuredAt) {
		next = last.SkippedAt.Add(min(interval, RetryAfterSkip))
	}
	if wait := next.Sub(now); wait > 0 {
		return false, wait
	}
	return true, 0
}

// Load is what decides whether measuring now is fair to the cluster.
type Load struct {
	// Health of the index, and ClusterHealth of its cluster ("" when unknown).
	Health, ClusterHealth string
	// Documents in the index.
	Documents int64
	// Benchmarking: a BenchmarkRun is measuring the index (its load is not the clients').
	Benchmarking bool
	// CPUPercent of the nodes' processors their OpenSearch processes used just before; nil
	// while not read (the read costs a second, so it comes last).
	CPUPercent *float64
	// HeadroomPercent of CPU to keep free.
	HeadroomPercent int32
}

// Skip says why a due measurement must not run now, "" when it may.
func Skip(l Load) string {
	switch {
	case l.Health == "red":
		return "index health is red"
	case l.ClusterHealth == "red":
		return "cluster health is red"
	case l.Documents == 0:
		return "the index has no documents"
	case l.Benchmarking:
		return "a BenchmarkRun is measuring the index"
	case l.CPUPercent != nil && *l.CPUPercent > float64(100-l.HeadroomPercent):
		return fmt.Sprintf("the nodes' CPU (%.0f%%) is above %d%%, the headroom's limit", *l.CPUPercent, 100-l.HeadroomPercent)
	}
	return ""
}
