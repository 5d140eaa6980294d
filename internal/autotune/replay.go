package autotune

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/indexspec"
)

// Step is one part of a load schedule: so many closed-loop clients for so long.
type Step struct {
	Clients  float64
	Duration time.Duration
}

// ParseSchedule reads a load schedule written as clients×duration steps, comma-separated:
// "1x2m,4x2m,8x2m,4x2m,1x2m".
func ParseSchedule(s string) ([]Step, error) {
	var out []Step
	for _, part := range strings.Split(s, ",") {
		clients, duration, ok := strings.Cut(strings.TrimSpace(part), "x")
		if !ok {
			return nil, fmt.Errorf("schedule step %q: want clients x duration, like 4x2m", part)
		}
		c, err := strconv.ParseFloat(clients, 64)
		if err != nil || c < 0 {
			return nil, fmt.Errorf("schedule step %q: clients %q is not a count", part, clients)
		}
		d, err := time.ParseDuration(duration)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("schedule step %q: duration %q is not a positive duration", part, duration)
		}
		out = append(out, Step{Clients: c, Duration: d})
	}
	return out, nil
}

// ReplayConfig is a simulated day: the table is the truth of the simulation (what each
// setting gives at a load, interpolated as the tuner predicts), the tuner runs its own code
// on it.
type ReplayConfig struct {
	Table Table
	// Params are the tuning targets; the replay sets Clients and Current.
	Params Params
	// Sample is how often the tuner reads the load (the mean over the last Sample) and
	// decides: the operator's resync. Window is a report window; both divide the steps.
	Sample, Window time.Duration
	// MinDwell is spec.tuning.minDwell.
	MinDwell time.Duration
}

// ReplayRun is one run over the schedule: the tuner (Auto), one setting throughout
// (static), or the best setting of each step in hindsight (oracle).
type ReplayRun struct {
	Name string
	// P50Ms, P90Ms and P99Ms are time-weighted over the schedule.
	P50Ms, P90Ms, P99Ms float64
	// WindowsOverBudget counts the windows whose mean CPU is above 100 - headroom.
	WindowsOverBudget, Windows int
	// Changes of the setting; Lags from each load step to the run's first change in it.
	Changes int
	Lags    []time.Duration
	// Settings and P90 per window, for the plot.
	Settings []indexspec.Slices
	P90      []float64
}

// Replay runs the schedule with the tuner, with each measured setting of the candidates
// alone, and with the oracle: for each step the setting with the lowest p90 whose CPU fits
// the budget (the least CPU when none does). Auto starts at no load, as an idle index.
func Replay(cfg ReplayConfig, schedule []Step) ([]ReplayRun, error) {
	if len(schedule) == 0 {
		return nil, fmt.Errorf("an empty schedule: nothing to replay")
	}
	if cfg.Sample <= 0 || cfg.Window <= 0 || cfg.Window%cfg.Sample != 0 {
		return nil, fmt.Errorf("sample %s and window %s: the window must be a whole number of samples", cfg.Sample, cfg.Window)
	}
	for _, s := range schedule {
		if s.Duration%cfg.Window != 0 {
			return nil, fmt.Errorf("step of %s is not a whole number of %s windows", s.Duration, cfg.Window)
		}
	}
	candidates := predict(cfg.Table, Params{Candidates: cfg.Params.Candidates})
	if len(candidates) == 0 {
		return nil, ErrNoMeasurement
	}
	budget := 100 - cfg.Params.HeadroomPercent
	// load is the clients of each sample interval.
	var load []float64
	for _, s := range schedule {
		for range int(s.Duration / cfg.Sample) {
			load = append(load, s.Clients)
		}
	}
	stepStarts := map[int]bool{}
	at := 0
	for _, s := range schedule {
		stepStarts[at] = true
		at += int(s.Duration / cfg.Sample)
	}

	auto := func(i int, applied indexspec.Slices, lastChange time.Time) (indexspec.Slices, error) {
		p := cfg.Params
		p.Current = &applied
		if i > 0 {
			p.Clients = load[i-1] // the mean over the last sample interval, read at its end
		}
		d, err := Decide(cfg.Table, p)
		if err != nil {
			return applied, err
		}
		now := time.Unix(0, 0).Add(time.Duration(i) * cfg.Sample)
		return Dwell(cfg.Table, p, d, lastChange, now, cfg.MinDwell).SliceCount, nil
	}
	oracle := func(clients float64) indexspec.Slices {
		preds := predict(cfg.Table, Params{Clients: clients, Candidates: cfg.Params.Candidates})
		best := preds[0] // the least CPU
		for _, pr := range preds {
			if pr.cpu <= budget && (best.cpu > budget || pr.p90 < best.p90) {
				best = pr
			}
		}
		return best.setting
	}

	run := func(name string, choose func(i int, applied indexspec.Slices, lastChange time.Time) (indexspec.Slices, error)) (ReplayRun, error) {
		r := ReplayRun{Name: name}
		perWindow := int(cfg.Window / cfg.Sample)
		applied, lastChange, stepStart, changedInStep := indexspec.Slices(-1), time.Time{}, 0, false
		var windowCPU, windowP90 float64
		for i, clients := range load {
			if stepStarts[i] {
				stepStart, changedInStep = i, false
			}
			next, err := choose(i, applied, lastChange)
			if err != nil {
				return r, err
			}
			if applied != -1 && next != applied {
				r.Changes++
				lastChange = time.Unix(0, 0).Add(time.Duration(i) * cfg.Sample)
				if stepStart > 0 && !changedInStep {
					r.Lags = append(r.Lags, time.Duration(i-stepStart)*cfg.Sample)
				}
				changedInStep = true
			}
			applied = next
			// Every run applies measured settings only: the prediction exists.
			pr := predict(cfg.Table, Params{Clients: clients, Candidates: []indexspec.Slices{applied}})[0]
			w := 1 / float64(len(load))
			r.P50Ms, r.P90Ms, r.P99Ms = r.P50Ms+w*pr.p50, r.P90Ms+w*pr.p90, r.P99Ms+w*pr.p99
			windowCPU, windowP90 = windowCPU+pr.cpu/float64(perWindow), windowP90+pr.p90/float64(perWindow)
			if (i+1)%perWindow == 0 {
				r.Windows++
				if windowCPU > budget {
					r.WindowsOverBudget++
				}
				r.Settings, r.P90 = append(r.Settings, applied), append(r.P90, windowP90)
				windowCPU, windowP90 = 0, 0
			}
		}
		return r, nil
	}

	var runs []ReplayRun
	r, err := run("auto", auto)
	if err != nil {
		return nil, err
	}
	runs = append(runs, r)
	settings := make([]indexspec.Slices, 0, len(candidates))
	for _, c := range candidates {
		settings = append(settings, c.setting)
	}
	slices.SortFunc(settings, func(a, b indexspec.Slices) int { return cmp.Compare(cost(a), cost(b)) })
	for _, s := range settings {
		r, _ := run("static "+s.String(), func(int, indexspec.Slices, time.Time) (indexspec.Slices, error) { return s, nil })
		runs = append(runs, r)
	}
	r, _ = run("oracle", func(i int, _ indexspec.Slices, _ time.Time) (indexspec.Slices, error) { return oracle(load[i]), nil })
	return append(runs, r), nil
}

// AutoAgainstOracle is how far the tuner's time-weighted p90 lies from the oracle's, as a
// fraction (0.05: 5 % above); false when runs lack either.
func AutoAgainstOracle(runs []ReplayRun) (float64, bool) {
	var auto, oracle float64
	for _, r := range runs {
		switch r.Name {
		case "auto":
			auto = r.P90Ms
		case "oracle":
			oracle = r.P90Ms
		}
	}
	if auto <= 0 || oracle <= 0 {
		return 0, false
	}
	return auto/oracle - 1, true
}

// BestWithinBudget is the static run with the lowest p90 that never went over the CPU
// budget; false when every static setting did.
func BestWithinBudget(runs []ReplayRun) (ReplayRun, bool) {
	var best ReplayRun
	found := false
	for _, r := range runs {
		if strings.HasPrefix(r.Name, "static ") && r.WindowsOverBudget == 0 && (!found || r.P90Ms < best.P90Ms) {
			best, found = r, true
		}
	}
	return best, found
}
