package autotune

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"
	"time"
)

func TestParseSchedule(t *testing.T) {
	got, err := ParseSchedule("1x2m, 4x30s,0x1h")
	want := []Step{{1, 2 * time.Minute}, {4, 30 * time.Second}, {0, time.Hour}}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ParseSchedule = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "4", "4x", "x2m", "-1x2m", "4x-2m", "4x0s", "fourx2m"} {
		if _, err := ParseSchedule(bad); err == nil {
			t.Errorf("ParseSchedule(%q) accepted", bad)
		}
	}
}

// TestReplayOverThePublishedTable replays the day of issue #43 — 1, 4, 8, 4, 1 clients,
// two minutes each — over OpenSearch's published concurrent-segment-search table (big5,
// 32 cores, 17 segments; p90 in the table's unit and node CPU), with 20 % headroom, the
// tuner sampling every 10 s: the oracle (the best setting of each step in hindsight) is
// 42 % below the best static setting that keeps the budget, and the tuner follows it
// within 5 %, one sample after each step.
func TestReplayOverThePublishedTable(t *testing.T) {
	raw, err := os.ReadFile("testdata/replay/big5-32-cores.json")
	if err != nil {
		t.Fatal(err)
	}
	var table Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	schedule, _ := ParseSchedule("1x2m,4x2m,8x2m,4x2m,1x2m")
	runs, err := Replay(ReplayConfig{Table: table, Params: Params{HeadroomPercent: 20, MinGainPerCPUPercent: 1, HysteresisPercent: 5},
		Sample: 10 * time.Second, Window: 10 * time.Second}, schedule)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ReplayRun{}
	for _, r := range runs {
		byName[r.Name] = r
		t.Logf("%-36s p90 %8.0f  windows over 80%% CPU %2d/%d  changes %d  lags %v", r.Name, r.P90Ms, r.WindowsOverBudget, r.Windows, r.Changes, r.Lags)
	}
	auto, oracle := byName["auto"], byName["oracle"]
	best, ok := BestWithinBudget(runs)
	if !ok || best.Name != "static 2 slices" {
		t.Fatalf("best static within the budget %+v, want 2 slices (4 slices and Lucene's default go over it)", best)
	}
	if gain := 1 - oracle.P90Ms/best.P90Ms; gain < 0.40 {
		t.Errorf("oracle %.0f vs best static %.0f: %.0f%% below, want ≥ 40%%", oracle.P90Ms, best.P90Ms, gain*100)
	}
	if auto.P90Ms > oracle.P90Ms*1.05 {
		t.Errorf("auto %.0f vs oracle %.0f: more than 5%% above", auto.P90Ms, oracle.P90Ms)
	}
	if gain := 1 - auto.P90Ms/best.P90Ms; gain < 0.40 {
		t.Errorf("auto %.0f vs best static within the budget %.0f: %.0f%% better, want ≥ 40%%", auto.P90Ms, best.P90Ms, gain*100)
	}
	// One change per load step, each one sample after it; over the budget only in the
	// samples before the tuner has read the new load.
	if auto.Changes != 4 || !slices.Equal(auto.Lags, []time.Duration{10 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second}) {
		t.Errorf("auto: %d changes, lags %v; want 4, each 10s", auto.Changes, auto.Lags)
	}
	if auto.WindowsOverBudget > 2 || oracle.WindowsOverBudget != 0 {
		t.Errorf("windows over the budget: auto %d, oracle %d", auto.WindowsOverBudget, oracle.WindowsOverBudget)
	}
}

// TestReplayDwellHoldsChanges: with a dwell longer than a step, the tuner makes at most
// one change per dwell and falls behind the oracle.
func TestReplayDwellHoldsChanges(t *testing.T) {
	table := published()
	schedule, _ := ParseSchedule("1x1m,8x1m,1x1m,8x1m")
	cfg := ReplayConfig{Table: table, Params: Params{HeadroomPercent: 20, MinGainPerCPUPercent: 1, HysteresisPercent: 5}, Sample: 10 * time.Second, Window: 30 * time.Second}
	free, err := Replay(cfg, schedule)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MinDwell = 3 * time.Minute
	held, err := Replay(cfg, schedule)
	if err != nil {
		t.Fatal(err)
	}
	if free[0].Changes < 3 || held[0].Changes != 1 {
		t.Errorf("changes without a dwell %d (want ≥ 3), with a 3m dwell %d (want 1)", free[0].Changes, held[0].Changes)
	}
	if free[0].Windows != 8 || len(free[0].Settings) != 8 {
		t.Errorf("windows %d, settings %v: want 8 of 30s", free[0].Windows, free[0].Settings)
	}
	if _, err := Replay(ReplayConfig{Table: table, Sample: 20 * time.Second, Window: 30 * time.Second}, schedule); err == nil {
		t.Error("a window of 1.5 samples was accepted")
	}
	if _, err := Replay(ReplayConfig{Table: table, Sample: 10 * time.Second, Window: 30 * time.Second}, []Step{{Clients: 1, Duration: 45 * time.Second}}); err == nil {
		t.Error("a step of 1.5 windows was accepted")
	}
	if _, err := Replay(cfg, nil); err == nil {
		t.Error("an empty schedule was accepted")
	}
}

func TestAutoAgainstOracle(t *testing.T) {
	for _, c := range []struct {
		name string
		runs []ReplayRun
		want float64
		ok   bool
	}{
		{"above", []ReplayRun{{Name: "auto", P90Ms: 4.2}, {Name: "static 2", P90Ms: 3}, {Name: "oracle", P90Ms: 4}}, 0.05, true},
		{"below", []ReplayRun{{Name: "oracle", P90Ms: 4}, {Name: "auto", P90Ms: 3}}, -0.25, true},
		{"no oracle (no static run)", []ReplayRun{{Name: "auto", P90Ms: 4}}, 0, false},
		{"no auto", []ReplayRun{{Name: "static 2", P90Ms: 3}, {Name: "oracle", P90Ms: 3}}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := AutoAgainstOracle(c.runs)
			if ok != c.ok || math.Abs(got-c.want) > 1e-9 {
				t.Errorf("AutoAgainstOracle = %v, %v; want %v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}
