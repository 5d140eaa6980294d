// Package rebuild holds the decisions of a blue/green rebuild: the names of the indexes it
// builds, when the copy has caught up enough to gate, what the gate says, and the copy's
// progress figures.
//
// The copy is by sequence number: each pass records the source's primaries' local
// checkpoints (opensearch.Client.SeqNos), refreshes the source, and copies every document
// written after the previous pass's checkpoints with a _reindex task. A document written
// during a pass has a sequence number above that pass's checkpoint on its shard, so the next
// pass copies it again (an overwrite by id, idempotent); the last pass runs while the source
// refuses writes, with none in flight, so nothing is written after it. A deletion leaves no document to copy: the cut-over finds
// them by count (the target holds every source document, so equal counts mean equal sets)
// and, only when the target holds more, by id.
package rebuild

import (
	"fmt"
	"strconv"
	"time"
)

// TargetName is the index a rebuild for a spec generation builds: derived, not random, so
// that an operator restarted before it recorded the name finds the index it created.
func TargetName(name string, generation int64) string {
	return name + "-r" + strconv.FormatInt(generation, 10)
}

// CloneName is the copy an alias-less index is kept as when its first rebuild swaps: the
// index's own name becomes the alias, so the index itself must go.
func CloneName(name string) string { return name + "-r0" }

// CatchUpDocuments is the most documents a catch-up pass may copy for the copy to be
// considered caught up: the final pass, which runs under the write block, copies about as
// many as the pass before it did, so this bounds the write-blocked window.
const CatchUpDocuments = 1000

// MaxPasses bounds the catch-up passes before gating: a source written faster than the
// copy runs would never catch up; after this many the gate runs anyway and the final pass
// copies what is left under the write block.
const MaxPasses = 8

// CaughtUp says the copy may stop catching up and gate: the last pass copied few documents,
// or enough passes ran.
func CaughtUp(passes int32, lastPassDocuments int64) bool {
	return passes >= 2 && lastPassDocuments <= CatchUpDocuments || passes >= MaxPasses
}

// Rate is a pass's documents per second and when it is expected to end; ok is false before
// anything was copied.
func Rate(done, total int64, running time.Duration, now time.Time) (perSecond float64, eta time.Time, ok bool) {
	if done <= 0 || running <= 0 {
		return 0, time.Time{}, false
	}
	perSecond = float64(done) / running.Seconds()
	left := max(total-done, 0)
	return perSecond, now.Add(time.Duration(float64(left) / perSecond * float64(time.Second))), true
}

// Gate is what a rebuilt index must show.
type Gate struct {
	MinRecall                   float64
	MaxLatencyRegressionPercent float64
}

// Figures are one index's measurement of one field.
type Figures struct {
	Recall float64
	P90    time.Duration
}

// LatencyFloor is the least p90 the regression bound is taken against: below a
// millisecond, loopback and scheduling noise are most of what is measured, and a 0.3 → 0.5
// ms step is not a regression anyone would refuse an index for.
const LatencyFloor = time.Millisecond

// Check says whether target passed the gate against source, and how it failed.
func (g Gate) Check(source, target Figures) (bool, []string) {
	var failures []string
	if target.Recall < g.MinRecall {
		failures = append(failures, fmt.Sprintf("recall %.4f is below the gate's %.4f (serving index: %.4f)", target.Recall, g.MinRecall, source.Recall))
	}
	bound := time.Duration(float64(max(source.P90, LatencyFloor)) * (1 + g.MaxLatencyRegressionPercent/100))
	if target.P90 > bound {
		failures = append(failures, fmt.Sprintf("p90 %sms is above the gate's %sms (serving index: %sms, +%.0f%%)", Millis(target.P90), Millis(bound), Millis(source.P90), g.MaxLatencyRegressionPercent))
	}
	return len(failures) == 0, failures
}

// Millis is a latency in milliseconds, two decimals, as status shows it.
func Millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64)
}
