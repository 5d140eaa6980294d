// Package autotune chooses an index's concurrent-segment-search slice count from benchmark
// results and the live load: the setting with the lowest predicted p90 whose predicted CPU
// stays under the headroom target, moving to a costlier setting only when it buys enough
// latency per extra CPU point, and keeping the current setting when the gain is too small
// to be worth a change. It is a pure function of its inputs.
//
// Slice settings are indexspec.Slices: 1 concurrent search off for the index, 0 Lucene's
// default slicing, N >= 2 index.search.concurrent.max_slice_count N.
package autotune

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/vectorpilot/vectorpilot/internal/indexspec"
)

// Measurement is one benchmark cell: a slice setting under a client load.
type Measurement struct {
	SliceCount indexspec.Slices `json:"sliceCount"`
	Clients    int              `json:"clients"`
	P50Ms      float64          `json:"p50Ms"`
	P90Ms      float64          `json:"p90Ms"`
	P99Ms      float64          `json:"p99Ms"`
	QPS        float64          `json:"qps"`
	CPUPercent float64          `json:"cpuPercent"`
	Recall     float64          `json:"recall,omitempty"`
	// InFlight is the mean number of searches in flight on the index's shards during the
	// cell (its query time per second of wall time, Little's law), with which the tuner
	// reads the live load in clients. 0 when not measured.
	InFlight float64 `json:"inFlight,omitempty"`
}

// Table is a benchmark's result: the bench engine's JSON output and the tuner's input.
type Table struct {
	Cores    int           `json:"cores"`
	Segments int           `json:"segments"`
	Results  []Measurement `json:"results"`
}

// Params are the tuning targets and the load to tune for.
type Params struct {
	// HeadroomPercent of CPU to keep free: predicted CPU must stay <= 100 - headroom.
	HeadroomPercent float64
	// MinGainPerCPUPercent is the least p90 reduction, in percent of the cheaper setting's
	// p90, that one extra point of CPU must buy.
	MinGainPerCPUPercent float64
	// Clients is the load level to tune for, in benchmark clients; between measured
	// levels it is interpolated.
	Clients float64
	// Candidates limits the settings considered; empty means every measured one.
	Candidates []indexspec.Slices
	// Current is the slice count applied now, nil when none is known.
	Current *indexspec.Slices
	// HysteresisPercent: the current setting is kept while the best one predicts a p90 no
	// more than this much lower and the current one fits the headroom.
	HysteresisPercent float64
}

// Decision is the tuner's choice and why.
type Decision struct {
	SliceCount          indexspec.Slices `json:"sliceCount"`
	Reason              string           `json:"reason"`
	PredictedP90Ms      float64          `json:"predictedP90Ms"`
	PredictedCPUPercent float64          `json:"predictedCpuPercent"`
}

// prediction is one setting's expected latency and CPU at the requested load.
type prediction struct {
	setting       indexspec.Slices
	p50, p90, p99 float64
	cpu           float64
	note          string
}

// measured is a cell as a prediction.
func measured(m Measurement, note string) prediction {
	return prediction{setting: m.SliceCount, p50: m.P50Ms, p90: m.P90Ms, p99: m.P99Ms, cpu: m.CPUPercent, note: note}
}

// ErrNoMeasurement says no candidate setting has any measurement, so nothing can be chosen.
var ErrNoMeasurement = errors.New("no measured setting among the candidates")

// Decide picks a slice count for p.Clients of load.
func Decide(t Table, p Params) (Decision, error) {
	preds := predict(t, p)
	if len(preds) == 0 {
		return Decision{}, ErrNoMeasurement
	}
	budget := 100 - p.HeadroomPercent
	var feasible []prediction
	for _, pr := range preds {
		if pr.cpu <= budget {
			feasible = append(feasible, pr)
		}
	}
	if len(feasible) == 0 {
		least := preds[0] // sorted by CPU
		return decision(least, fmt.Sprintf("no setting keeps CPU under %.0f%% at %.1f clients; %s uses the least CPU%s", budget, p.Clients, least.setting, least.note)), nil
	}
	// Walk from the cheapest setting up, moving only when the p90 bought per extra CPU
	// point is worth it.
	best := feasible[0]
	reason := fmt.Sprintf("%s is the cheapest setting under %.0f%% CPU", best.setting, budget)
	for _, pr := range feasible[1:] {
		if pr.p90 >= best.p90 {
			continue
		}
		gainPct := (best.p90 - pr.p90) / best.p90 * 100
		extraCPU := pr.cpu - best.cpu
		if extraCPU > 0 && gainPct/extraCPU < p.MinGainPerCPUPercent {
			continue
		}
		reason = fmt.Sprintf("%s cuts p90 %.0f%% (%.1f→%.1f ms) for %+.1f CPU points over %s, within %.0f%% CPU",
			pr.setting, gainPct, best.p90, pr.p90, extraCPU, best.setting, budget)
		best = pr
	}
	if p.Current != nil && *p.Current != best.setting {
		for _, pr := range feasible {
			if pr.setting == *p.Current && pr.p90 <= best.p90*(1+p.HysteresisPercent/100) {
				return decision(pr, fmt.Sprintf("kept %s: %s predicts p90 %.1f ms vs %.1f ms, within the %.0f%% hysteresis band%s",
					pr.setting, best.setting, best.p90, pr.p90, p.HysteresisPercent, pr.note)), nil
			}
		}
	}
	return decision(best, reason+best.note), nil
}

func decision(pr prediction, reason string) Decision {
	return Decision{SliceCount: pr.setting, Reason: reason, PredictedP90Ms: round(pr.p90), PredictedCPUPercent: round(pr.cpu)}
}

func round(v float64) float64 { return math.Round(v*100) / 100 }

// predict interpolates p90 and CPU at p.Clients for every candidate setting with
// measurements, sorted by predicted CPU (then fewer slices first).
func predict(t Table, p Params) []prediction {
	bySlices := map[indexspec.Slices][]Measurement{}
	for _, m := range t.Results {
		bySlices[m.SliceCount] = append(bySlices[m.SliceCount], m)
	}
	allowed := func(s indexspec.Slices) bool { return len(p.Candidates) == 0 || slices.Contains(p.Candidates, s) }
	var out []prediction
	for s, ms := range bySlices {
		if !allowed(s) {
			continue
		}
		sort.Slice(ms, func(i, j int) bool { return ms[i].Clients < ms[j].Clients })
		out = append(out, interpolate(s, ms, p.Clients))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].cpu != out[j].cpu {
			return out[i].cpu < out[j].cpu
		}
		return cost(out[i].setting) < cost(out[j].setting)
	})
	return out
}

// cost orders settings by how much parallelism they ask for: off, then N slices, then
// Lucene's default (as many slices as it likes).
func cost(setting indexspec.Slices) int {
	if setting == indexspec.SlicesLucene {
		return math.MaxInt
	}
	return int(setting)
}

// interpolate predicts at load clients from measurements sorted by client count: linear
// between the two measured levels around it; at the nearest level outside the range (and
// the reason says so).
func interpolate(setting indexspec.Slices, ms []Measurement, clients float64) prediction {
	first, last := ms[0], ms[len(ms)-1]
	switch {
	case clients <= float64(first.Clients):
		note := ""
		if clients < float64(first.Clients) {
			note = fmt.Sprintf(" (load below the lowest measured level, %d clients, predicted from it)", first.Clients)
		}
		return measured(first, note)
	case clients >= float64(last.Clients):
		note := ""
		if clients > float64(last.Clients) {
			note = fmt.Sprintf(" (load above the highest measured level, %d clients, predicted from it)", last.Clients)
		}
		return measured(last, note)
	}
	for i := 1; i < len(ms); i++ {
		lo, hi := ms[i-1], ms[i]
		if clients <= float64(hi.Clients) {
			f := (clients - float64(lo.Clients)) / float64(hi.Clients-lo.Clients)
			at := func(a, b float64) float64 { return a + f*(b-a) }
			return prediction{setting: setting, p50: at(lo.P50Ms, hi.P50Ms), p90: at(lo.P90Ms, hi.P90Ms), p99: at(lo.P99Ms, hi.P99Ms), cpu: at(lo.CPUPercent, hi.CPUPercent)}
		}
	}
	return measured(last, "")
}

// InFlight is the mean number of searches in flight over elapsed, from the query time
// the index's shards spent in it (per shard): Little's law, L = λW, summed query time
// over wall time.
func InFlight(queryMillis int64, elapsed time.Duration) float64 {
	if elapsed <= 0 || queryMillis < 0 {
		return 0
	}
	return float64(queryMillis) / 1000 / elapsed.Seconds()
}

// LiveClients reads the live load in the benchmark's unit (clients) for the applied
// setting, and says how: through searches in flight when the table measured them for the
// setting (ClientsInFlight), else through its throughput (ClientsForRate), as tables from
// before in-flight figures and OpenSearch Benchmark's must be read. ok is false when the
// table never measured the setting.
func LiveClients(t Table, setting indexspec.Slices, qps, inFlight float64) (clients float64, by string, ok bool) {
	seen, withInFlight := false, false
	for _, m := range t.Results {
		if m.SliceCount == setting {
			seen = true
			withInFlight = withInFlight || m.InFlight > 0
		}
	}
	switch {
	case withInFlight:
		return ClientsInFlight(t, setting, qps, inFlight), "searches in flight", true
	case seen:
		c, _ := ClientsForRate(t, setting, qps)
		return c, "throughput", true
	}
	return 0, "", false
}

// ClientsInFlight reads the live load in closed-loop clients by Little's law over a
// client's whole loop. A client's search is either in the index's query phase — inFlight,
// measured live from the index's query time — or outside it: the HTTP path, the fetch
// phase, queues, the client itself. The table's cells give the time a search spends outside
// the query phase, (clients − inFlight) / qps, taken at the live in-flight count
// (interpolated between the applied setting's cells, the nearest cell's outside them), and
// clients = inFlight + qps × that time. A query phase faster or slower than in the sweep
// (warm caches, a merge) is read as the clients it is; only a change of the time outside
// it moves the reading. Cells without in-flight figures are not used; with none, the
// in-flight count is the reading (every client in the query phase).
func ClientsInFlight(t Table, setting indexspec.Slices, qps, inFlight float64) float64 {
	var ms []Measurement
	for _, m := range t.Results {
		if m.SliceCount == setting && m.InFlight > 0 && m.QPS > 0 {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return inFlight
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].InFlight < ms[j].InFlight })
	outside := func(m Measurement) float64 { return math.Max(float64(m.Clients)-m.InFlight, 0) / m.QPS }
	wait := outside(ms[len(ms)-1])
	if inFlight <= ms[0].InFlight {
		wait = outside(ms[0])
	}
	for i := 1; i < len(ms); i++ {
		lo, hi := ms[i-1], ms[i]
		if inFlight >= lo.InFlight && inFlight <= hi.InFlight && hi.InFlight > lo.InFlight {
			f := (inFlight - lo.InFlight) / (hi.InFlight - lo.InFlight)
			wait = outside(lo) + f*(outside(hi)-outside(lo))
			break
		}
	}
	return inFlight + qps*wait
}

// ClientsForRate converts a live query rate into the benchmark's load unit: the client
// count at which the given setting measured that throughput, interpolated between levels
// and proportional outside them. It misreads a change of speed between the sweep and the
// live load as load; LiveClients prefers searches in flight where the table has them.
func ClientsForRate(t Table, setting indexspec.Slices, qps float64) (float64, bool) {
	var ms []Measurement
	for _, m := range t.Results {
		if m.SliceCount == setting {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return 0, false
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Clients < ms[j].Clients })
	if qps <= ms[0].QPS {
		return float64(ms[0].Clients) * qps / math.Max(ms[0].QPS, 1e-9), true
	}
	for i := 1; i < len(ms); i++ {
		lo, hi := ms[i-1], ms[i]
		if qps <= hi.QPS && hi.QPS > lo.QPS {
			f := (qps - lo.QPS) / (hi.QPS - lo.QPS)
			return float64(lo.Clients) + f*float64(hi.Clients-lo.Clients), true
		}
	}
	last := ms[len(ms)-1]
	return float64(last.Clients) * qps / math.Max(last.QPS, 1e-9), true
}
