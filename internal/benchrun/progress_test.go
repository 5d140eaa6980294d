package benchrun

import (
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
)

func TestProgress(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	var got []v1alpha1.BenchmarkProgress
	p := NewProgress(4, func(s v1alpha1.BenchmarkProgress) { got = append(got, s) })
	p.Now = func() time.Time { return now }
	step := func(d time.Duration) { now = now.Add(d) }

	p.Loaded(1000, 3000) // first: reported
	step(time.Second)
	p.Loaded(2000, 3000) // within loadReportEvery: not
	step(5 * time.Second)
	p.Loaded(2500, 3000) // after it: reported
	step(time.Second)
	p.Loaded(3000, 3000) // the last: always
	p.Variants()
	p.Sweeping()
	step(10 * time.Second)
	p.Cell()
	step(10 * time.Second)
	p.Cell()
	p.Cell()
	p.Cell()
	p.Representations()

	want := []struct{ step, docs, cells, eta string }{
		{StepLoading, "1000/3000", "", ""},
		{StepLoading, "2500/3000", "", ""},
		{StepLoading, "3000/3000", "", ""},
		{StepVariants, "", "", ""},
		{StepSweeping, "", "0/4", ""},
		{StepSweeping, "", "1/4", "12:00:47"}, // from 12:00:07, 10 s a cell, 3 to go
		{StepSweeping, "", "2/4", "12:00:47"},
		{StepSweeping, "", "3/4", "12:00:33"}, // faster: 20 s for 3, 1 to go
		{StepSweeping, "", "4/4", ""},
		{StepRepresentations, "", "4/4", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d reports %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		eta := ""
		if g.ETA != nil {
			eta = g.ETA.UTC().Format(time.TimeOnly)
		}
		if g.Step != w.step || g.Documents != w.docs || g.Cells != w.cells || eta != w.eta {
			t.Errorf("report %d: %+v (eta %q), want %+v", i, g, eta, w)
		}
	}
}

func TestCells(t *testing.T) {
	w := Workload{}
	if n := w.Cells(3, 4); n != 12 {
		t.Errorf("3 slice settings × 4 client levels: %d cells", n)
	}
	w.Variants = make([]bench.Variant, 2)
	if n := w.Cells(3, 4); n != 24 {
		t.Errorf("with 2 variants: %d cells", n)
	}
}
