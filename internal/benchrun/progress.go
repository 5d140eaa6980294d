package benchrun

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
)

// Steps of a Local run, as status.progress.step names them.
const (
	StepLoading         = "Loading"
	StepVariants        = "Variants"
	StepSweeping        = "Sweeping"
	StepRepresentations = "Representations"
)

// loadReportEvery is how often the load's progress is worth a status write: a load reports
// every batch, a write per batch would be a write per second.
const loadReportEvery = 5 * time.Second

// Progress follows a Local run and says when its status should change: every step, every
// cell, and the load at most every loadReportEvery. Report is called with each new state;
// it must not block for long (the sweep waits for it). One goroutine uses it.
type Progress struct {
	Report func(v1alpha1.BenchmarkProgress)
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	state       v1alpha1.BenchmarkProgress
	cells       int
	done        int
	sweepStart  time.Time
	lastLoadOut time.Time
}

// NewProgress follows a run of cells sweep cells.
func NewProgress(cells int, report func(v1alpha1.BenchmarkProgress)) *Progress {
	return &Progress{Report: report, cells: cells}
}

func (p *Progress) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Loaded records documents loaded of total.
func (p *Progress) Loaded(loaded, total int) {
	now := p.now()
	if p.state.Step == StepLoading && now.Sub(p.lastLoadOut) < loadReportEvery && loaded < total {
		return
	}
	p.lastLoadOut = now
	p.state.Step, p.state.Documents = StepLoading, fraction(loaded, total)
	p.report()
}

// Variants records that the variants' nodes are read and their copies awaited.
func (p *Progress) Variants() {
	p.state.Step, p.state.Documents = StepVariants, ""
	p.report()
}

// Sweeping records that the sweep starts.
func (p *Progress) Sweeping() {
	p.sweepStart = p.now()
	p.state.Step, p.state.Documents, p.state.Cells = StepSweeping, "", fraction(0, p.cells)
	p.report()
}

// Cell records one more cell measured, and when the sweep should end at its pace so far.
func (p *Progress) Cell() {
	p.done++
	p.state.Cells = fraction(p.done, p.cells)
	p.state.ETA = ETA(p.sweepStart, p.now(), p.done, p.cells)
	p.report()
}

// Representations records that the representation sweep starts.
func (p *Progress) Representations() {
	p.state.Step, p.state.ETA = StepRepresentations, nil
	p.report()
}

func (p *Progress) report() {
	if p.Report != nil {
		p.Report(*p.state.DeepCopy())
	}
}

// ETA is when total units end at the pace of done units since start; nil before the
// first and after the last.
func ETA(start, now time.Time, done, total int) *metav1.Time {
	if done <= 0 || done >= total {
		return nil
	}
	perUnit := now.Sub(start) / time.Duration(done)
	end := now.Add(perUnit * time.Duration(total-done)).UTC().Truncate(time.Second)
	return &metav1.Time{Time: end}
}

// Cells is how many cells a sweep over sliceCounts × clients measures with the workload's
// variants (each slice setting measures every variant).
func (w Workload) Cells(sliceCounts, clients int) int {
	return sliceCounts * max(1, len(w.Variants)) * clients
}

func fraction(done, total int) string { return fmt.Sprintf("%d/%d", done, total) }
