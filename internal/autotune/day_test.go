package autotune

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/indexspec"
)

func TestSummarizeDay(t *testing.T) {
	// Two steps of two 10 s windows: idle-ish, then loaded.
	schedule := []Step{{Clients: 1, Duration: 20 * time.Second}, {Clients: 8, Duration: 20 * time.Second}}
	w := func(s indexspec.Slices, p90, cpu float64) Window {
		return Window{Setting: s, P50Ms: p90 / 2, P90Ms: p90, P99Ms: p90 * 2, CPUPercent: cpu}
	}
	four := DayRecord{Name: "static 4 slices", Windows: []Window{w(4, 2, 30), w(4, 2, 30), w(4, 9, 99), w(4, 9, 99)}}
	off := DayRecord{Name: "static off", Windows: []Window{w(1, 4, 10), w(1, 4, 10), w(1, 6, 60), w(1, 6, 60)}}
	// The tuner: 4 slices idle, off one window after the load rose.
	auto := DayRecord{Name: "auto", Windows: []Window{w(4, 2, 30), w(4, 2, 30), w(4, 9, 99), w(1, 6, 60)}}
	runs, err := SummarizeDay(schedule, 10*time.Second, 80, []DayRecord{auto, off, four})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ReplayRun{}
	for _, r := range runs {
		byName[r.Name] = r
	}
	for _, tc := range []struct {
		name           string
		p90            float64
		over, changes  int
		lags           []time.Duration
		settingsWindow []indexspec.Slices
	}{
		{"auto", (2 + 2 + 9 + 6) / 4.0, 1, 1, []time.Duration{20 * time.Second}, []indexspec.Slices{4, 4, 4, 1}},
		{"static off", 5, 0, 0, nil, []indexspec.Slices{1, 1, 1, 1}},
		{"static 4 slices", 5.5, 2, 0, nil, []indexspec.Slices{4, 4, 4, 4}},
		// Step 1: 4 slices (lower p90, fits); step 2: off (4 slices is over the budget).
		{"oracle", (2 + 2 + 6 + 6) / 4.0, 0, 1, []time.Duration{10 * time.Second}, []indexspec.Slices{4, 4, 1, 1}},
	} {
		r, ok := byName[tc.name]
		if !ok {
			t.Fatalf("no run %s in %v", tc.name, runs)
		}
		if math.Abs(r.P90Ms-tc.p90) > 1e-9 || r.WindowsOverBudget != tc.over || r.Windows != 4 || r.Changes != tc.changes ||
			!slices.Equal(r.Lags, tc.lags) || !slices.Equal(r.Settings, tc.settingsWindow) {
			t.Errorf("%s: p90 %.3f, over %d of %d, changes %d, lags %v, settings %v; want %.3f, %d of 4, %d, %v, %v",
				tc.name, r.P90Ms, r.WindowsOverBudget, r.Windows, r.Changes, r.Lags, r.Settings, tc.p90, tc.over, tc.changes, tc.lags, tc.settingsWindow)
		}
	}
	if math.Abs(byName["auto"].P50Ms-byName["auto"].P90Ms/2) > 1e-9 || math.Abs(byName["auto"].P99Ms-byName["auto"].P90Ms*2) > 1e-9 {
		t.Errorf("auto p50 %.3f, p99 %.3f: not the windows' time-weighted means", byName["auto"].P50Ms, byName["auto"].P99Ms)
	}

	// Where no static setting keeps the budget in a step, the oracle takes the least CPU.
	hot := DayRecord{Name: "static 2 slices", Windows: []Window{w(2, 3, 20), w(2, 3, 20), w(2, 7, 90), w(2, 7, 90)}}
	runs, err = SummarizeDay(schedule, 10*time.Second, 50, []DayRecord{four, hot})
	if err != nil {
		t.Fatal(err)
	}
	if oracle := runs[len(runs)-1]; oracle.Name != "oracle" || !slices.Equal(oracle.Settings, []indexspec.Slices{4, 4, 2, 2}) {
		t.Errorf("oracle %+v: want 4 slices idle (both fit, the lower p90), 2 slices loaded (neither fits, the least CPU)", oracle)
	}

	if _, err := SummarizeDay(schedule, 10*time.Second, 80, []DayRecord{{Name: "auto", Windows: auto.Windows[:3]}}); err == nil {
		t.Error("a run shorter than the schedule was summed up")
	}
	if _, err := SummarizeDay(schedule, 15*time.Second, 80, []DayRecord{auto}); err == nil {
		t.Error("steps that are no whole number of windows were accepted")
	}
}
