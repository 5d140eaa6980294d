package autotune

import (
	"strings"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/indexspec"
)

func TestFeedbackObserve(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	loop := Loop{Window: time.Minute, TolerancePercent: 25}
	// every 10 s, observed and predicted CPU percent
	samples := func(pairs ...[2]float64) []Sample {
		var out []Sample
		for i, p := range pairs {
			out = append(out, Sample{End: t0.Add(time.Duration(i+1) * 10 * time.Second), Seconds: 10, ObservedCPUPercent: p[0], PredictedCPUPercent: p[1]})
		}
		return out
	}
	repeat := func(n int, p [2]float64) [][2]float64 {
		out := make([][2]float64, n)
		for i := range out {
			out[i] = p
		}
		return out
	}
	cases := []struct {
		name           string
		start          Feedback
		samples        []Sample
		wantCorrection float64
		wantChangedAt  int // index of the sample that changed the correction, -1 none
		reasonHas      string
	}{
		{"agreeing samples never correct", Feedback{}, samples(repeat(12, [2]float64{22, 20})...), 1, -1, ""},
		{"the table from a faster machine: 3× its CPU for a whole minute corrects on the sixth sample",
			Feedback{}, samples(repeat(8, [2]float64{60, 20})...), 3, 5, "live CPU 60.0% where the table predicts 20.0% for 1m0s: table CPU × 3.00 (was × 1.00)"},
		{"a disagreement shorter than the window is forgotten when a sample agrees",
			Feedback{}, samples(append(append(repeat(4, [2]float64{60, 20}), [2]float64{21, 20}), repeat(4, [2]float64{60, 20})...)...), 1, -1, ""},
		{"a window that turns from above to below starts again",
			Feedback{}, samples(append(repeat(3, [2]float64{60, 20}), repeat(5, [2]float64{5, 20})...)...), 1, -1, ""},
		{"far below: a correction of 0.25 after a minute",
			Feedback{}, samples(repeat(6, [2]float64{5, 20})...), 0.25, 5, "× 0.25 (was × 1.00)"},
		{"a corrected loop agrees with what it corrected to",
			Feedback{Correction: 3}, samples(repeat(12, [2]float64{62, 20})...), 3, -1, ""},
		{"the window's ratio is of sums, not a mean of ratios",
			Feedback{}, samples([2]float64{40, 10}, [2]float64{40, 10}, [2]float64{40, 10}, [2]float64{80, 40}, [2]float64{80, 40}, [2]float64{80, 40}), 2.4, 5, "× 2.40"},
		{"a prediction of next to nothing is no evidence",
			Feedback{}, samples(repeat(12, [2]float64{30, 0.1})...), 1, -1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, changedAt, reason := c.start, -1, ""
			for i, s := range c.samples {
				var why string
				if f, why = f.Observe(s, loop); why != "" {
					if changedAt >= 0 {
						t.Fatalf("changed twice: at sample %d and %d", changedAt, i)
					}
					changedAt, reason = i, why
				}
			}
			if f.Correction != c.wantCorrection || changedAt != c.wantChangedAt || !strings.Contains(reason, c.reasonHas) {
				t.Errorf("correction %.2f changed at %d (%q), want %.2f at %d containing %q", f.Correction, changedAt, reason, c.wantCorrection, c.wantChangedAt, c.reasonHas)
			}
		})
	}
}

func TestCorrectedTableStepsDown(t *testing.T) {
	// The published table says 2 slices fit an 80% budget at 8 clients; the nodes burn
	// twice what it predicts, so only concurrent search off (40% × 2) still fits.
	p := Params{HeadroomPercent: 20, MinGainPerCPUPercent: 1, Clients: 8, Current: ptr(2)}
	d, err := Decide(published(), p)
	if err != nil || d.SliceCount != 2 {
		t.Fatalf("uncorrected: %+v %v, want 2 slices", d, err)
	}
	d, err = Decide(Corrected(published(), 2), p)
	if err != nil || d.SliceCount != 1 || d.PredictedCPUPercent != 80 {
		t.Errorf("corrected × 2: %+v %v, want concurrent search off at 80%%", d, err)
	}
	if published().Results[0].CPUPercent != 10 {
		t.Error("Corrected changed its input")
	}
}

func TestPredictedCPU(t *testing.T) {
	cases := []struct {
		slices  indexspec.Slices
		clients float64
		want    float64
	}{
		{2, 1, 10.3},
		{2, 4.5, 31.15},
		{2, 8, 52},
		{2, 0.5, 5.15},
		{2, 20, 52},
		{16, 1, 0},
	}
	for _, c := range cases {
		if got := PredictedCPU(published(), c.slices, c.clients); round(got) != c.want {
			t.Errorf("PredictedCPU(%d, %.1f) = %.2f, want %.2f", c.slices, c.clients, got, c.want)
		}
	}
}

func TestDwell(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	p := Params{Clients: 8, Current: ptr(2)}
	chosen := Decision{SliceCount: 1, Reason: "concurrent search off is the cheapest setting under 45% CPU", PredictedCPUPercent: 40}
	cases := []struct {
		name       string
		lastChange time.Time
		want       indexspec.Slices
		reasonHas  string
	}{
		{"within the dwell the applied setting stays, with its own prediction", now.Add(-2 * time.Minute), 2, "kept 2 slices until 2026-11-23T12:03:00Z (5m0s after the last change), though concurrent search off would be chosen"},
		{"after the dwell the change goes through", now.Add(-5 * time.Minute), 1, "cheapest setting"},
		{"no change yet: nothing to dwell on", time.Time{}, 1, "cheapest setting"},
	}
	for _, c := range cases {
		d := Dwell(published(), p, chosen, c.lastChange, now, 5*time.Minute)
		if d.SliceCount != c.want || !strings.Contains(d.Reason, c.reasonHas) {
			t.Errorf("%s: %+v", c.name, d)
		}
		if d.SliceCount == 2 && d.PredictedCPUPercent != 52 {
			t.Errorf("%s: kept setting predicts %.2f%% CPU, want its own 52%%", c.name, d.PredictedCPUPercent)
		}
	}
	if d := Dwell(published(), p, Decision{SliceCount: 2}, now, now, time.Hour); d.SliceCount != 2 {
		t.Errorf("keeping the applied setting is no change: %+v", d)
	}
}
