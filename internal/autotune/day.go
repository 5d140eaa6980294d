package autotune

import (
	"fmt"
	"strings"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/indexspec"
)

// Window is one report window of a day run on a live index: the setting in force at its
// end, the latencies its clients saw and the nodes' CPU over it.
type Window struct {
	Setting                         indexspec.Slices
	P50Ms, P90Ms, P99Ms, CPUPercent float64
}

// DayRecord is one run of a schedule on a live index, window by window: "auto" (the
// operator tuning), "static <setting>" (the setting held all day).
type DayRecord struct {
	Name    string
	Windows []Window
}

// SummarizeDay sums day runs up as Replay sums simulated ones — time-weighted p50/p90/p99,
// windows over the CPU budget, changes and the lag from each load step to the run's
// first change in it — and adds the oracle: for each step, the static run with the lowest
// mean p90 whose mean CPU over the step kept the budget (the least CPU where none did),
// its windows taken for that step.
func SummarizeDay(schedule []Step, window time.Duration, budget float64, records []DayRecord) ([]ReplayRun, error) {
	perStep := make([]int, len(schedule))
	total := 0
	for i, s := range schedule {
		if window <= 0 || s.Duration%window != 0 {
			return nil, fmt.Errorf("step of %s is not a whole number of %s windows", s.Duration, window)
		}
		perStep[i] = int(s.Duration / window)
		total += perStep[i]
	}
	var statics []DayRecord
	for _, r := range records {
		if len(r.Windows) != total {
			return nil, fmt.Errorf("run %s has %d windows, the schedule %d", r.Name, len(r.Windows), total)
		}
		if strings.HasPrefix(r.Name, "static ") {
			statics = append(statics, r)
		}
	}
	runs := make([]ReplayRun, 0, len(records)+1)
	for _, r := range records {
		runs = append(runs, summarize(r.Name, perStep, window, budget, r.Windows))
	}
	if len(statics) == 0 {
		return runs, nil
	}
	var oracle []Window
	at := 0
	for _, n := range perStep {
		best, bestP90, bestCPU := -1, 0.0, 0.0
		for i, r := range statics {
			p90, cpu := 0.0, 0.0
			for _, w := range r.Windows[at : at+n] {
				p90, cpu = p90+w.P90Ms/float64(n), cpu+w.CPUPercent/float64(n)
			}
			fits, bestFits := cpu <= budget, bestCPU <= budget
			if best < 0 || (fits && (!bestFits || p90 < bestP90)) || (!fits && !bestFits && cpu < bestCPU) {
				best, bestP90, bestCPU = i, p90, cpu
			}
		}
		oracle = append(oracle, statics[best].Windows[at:at+n]...)
		at += n
	}
	return append(runs, summarize("oracle", perStep, window, budget, oracle)), nil
}

// summarize is one run's figures from its windows.
func summarize(name string, perStep []int, window time.Duration, budget float64, windows []Window) ReplayRun {
	r := ReplayRun{Name: name, Windows: len(windows)}
	stepOf := make([]int, 0, len(windows))
	for s, n := range perStep {
		for range n {
			stepOf = append(stepOf, s)
		}
	}
	changedInStep := map[int]bool{}
	stepStart := 0
	for i, w := range windows {
		if i > 0 && stepOf[i] != stepOf[i-1] {
			stepStart = i
		}
		weight := 1 / float64(len(windows))
		r.P50Ms, r.P90Ms, r.P99Ms = r.P50Ms+weight*w.P50Ms, r.P90Ms+weight*w.P90Ms, r.P99Ms+weight*w.P99Ms
		if w.CPUPercent > budget {
			r.WindowsOverBudget++
		}
		if i > 0 && w.Setting != windows[i-1].Setting {
			r.Changes++
			// The setting read at a window's end changed within it: the lag is at most
			// the windows since the step began, this one included.
			if stepOf[i] > 0 && !changedInStep[stepOf[i]] {
				r.Lags = append(r.Lags, time.Duration(i-stepStart+1)*window)
			}
			changedInStep[stepOf[i]] = true
		}
		r.Settings, r.P90 = append(r.Settings, w.Setting), append(r.P90, w.P90Ms)
	}
	return r
}
