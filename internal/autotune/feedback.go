package autotune

import (
	"fmt"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/indexspec"
)

// The closed loop. A benchmark table predicts the CPU each slice setting costs; the nodes
// say what the applied one really costs. When the two disagree for a sustained window —
// the table came from another machine, the data grew, the queries changed — the table's
// CPU is corrected by the observed ratio and the decision is taken again on the corrected
// table: live CPU above the budget makes the applied setting infeasible and the tuner steps
// to a cheaper one; live CPU far below the prediction makes costlier settings fit. The
// correction is one factor for every setting: what the loop can observe is the applied
// setting only, and a table from a slower or faster machine is off by about the same
// factor everywhere.

// Feedback is the loop's memory between samples (the operator keeps it in the index's status).
type Feedback struct {
	// Correction multiplies the table's CPU; 1 is the table as measured.
	Correction float64
	// OutOfBandSince is the start of the current run of samples whose observed/predicted
	// ratio lies outside the tolerance band around Correction (zero: the last sample agreed),
	// Above whether they ran above it, and WindowObserved/WindowPredicted the observed and
	// uncorrected predicted CPU percent, weighted by seconds, summed over that run.
	OutOfBandSince  time.Time
	Above           bool
	WindowObserved  float64
	WindowPredicted float64
}

// Sample is the node CPU observed over one interval under the applied setting, and what
// the uncorrected table predicts for that setting at the load of the same interval.
type Sample struct {
	End                 time.Time
	Seconds             float64
	ObservedCPUPercent  float64
	PredictedCPUPercent float64
}

// Loop are the closed loop's targets.
type Loop struct {
	// Window is how long observed and predicted CPU must disagree before the table is corrected.
	Window time.Duration
	// TolerancePercent is the band around the current correction within which a sample
	// agrees: a ratio within [c/(1+t), c·(1+t)].
	TolerancePercent float64
}

// minPredictedCPU: below this the table predicts next to nothing and a ratio would be noise.
const minPredictedCPU = 0.5

// Observe folds one sample into f: it returns the feedback to keep and, when the
// correction changed, why.
func (f Feedback) Observe(s Sample, l Loop) (Feedback, string) {
	if f.Correction <= 0 {
		f.Correction = 1
	}
	if s.Seconds <= 0 || s.PredictedCPUPercent < minPredictedCPU {
		return f, ""
	}
	ratio := s.ObservedCPUPercent / s.PredictedCPUPercent
	band := 1 + l.TolerancePercent/100
	if ratio >= f.Correction/band && ratio <= f.Correction*band {
		f.OutOfBandSince, f.WindowObserved, f.WindowPredicted = time.Time{}, 0, 0
		return f, ""
	}
	above := ratio > f.Correction
	if f.OutOfBandSince.IsZero() || above != f.Above {
		// A new run of disagreeing samples, or one that turned the other way.
		f.OutOfBandSince, f.Above, f.WindowObserved, f.WindowPredicted = s.End.Add(-seconds(s.Seconds)), above, 0, 0
	}
	f.WindowObserved += s.ObservedCPUPercent * s.Seconds
	f.WindowPredicted += s.PredictedCPUPercent * s.Seconds
	lasted := s.End.Sub(f.OutOfBandSince)
	if lasted < l.Window {
		return f, ""
	}
	observed, predicted := f.WindowObserved/lasted.Seconds(), f.WindowPredicted/lasted.Seconds()
	was := f.Correction
	f.Correction = round(f.WindowObserved / f.WindowPredicted)
	f.OutOfBandSince, f.WindowObserved, f.WindowPredicted = time.Time{}, 0, 0
	return f, fmt.Sprintf("live CPU %.1f%% where the table predicts %.1f%% for %s: table CPU × %.2f (was × %.2f)",
		observed, predicted, lasted.Round(time.Second), f.Correction, was)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Corrected is t with every cell's CPU multiplied by factor.
func Corrected(t Table, factor float64) Table {
	out := t
	out.Results = make([]Measurement, len(t.Results))
	for i, m := range t.Results {
		m.CPUPercent *= factor
		out.Results[i] = m
	}
	return out
}

// PredictedCPU is the CPU t predicts for slice setting slices at load clients, for
// comparing with live CPU: between measured levels interpolated, below the lowest in
// proportion to the load (a setting's CPU is per query), above the highest that level's
// figure (the nodes were saturated there). 0 for a setting the table did not measure.
func PredictedCPU(t Table, setting indexspec.Slices, clients float64) float64 {
	var ms []Measurement
	for _, m := range t.Results {
		if m.SliceCount == setting {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return 0
	}
	pr := predict(Table{Results: ms}, Params{Clients: clients})[0]
	lowest := ms[0]
	for _, m := range ms {
		if m.Clients < lowest.Clients {
			lowest = m
		}
	}
	if clients < float64(lowest.Clients) {
		return lowest.CPUPercent * clients / float64(lowest.Clients)
	}
	return pr.cpu
}

// Dwell keeps the applied setting p.Current when the last change was less than minDwell
// before now, so the tuner changes the index at most once per minDwell; the decision it
// returns predicts for the kept setting.
func Dwell(t Table, p Params, d Decision, lastChange, now time.Time, minDwell time.Duration) Decision {
	if p.Current == nil || d.SliceCount == *p.Current || lastChange.IsZero() || now.Sub(lastChange) >= minDwell {
		return d
	}
	kept := prediction{setting: *p.Current}
	for _, pr := range predict(t, Params{Clients: p.Clients}) {
		if pr.setting == *p.Current {
			kept = pr
		}
	}
	return decision(kept, fmt.Sprintf("kept %s until %s (%s after the last change), though %s would be chosen: %s",
		kept.setting, lastChange.Add(minDwell).UTC().Format(time.RFC3339), minDwell, d.SliceCount, d.Reason))
}
