package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/bench"
	"github.com/vectorpilot/vectorpilot/internal/benchmark/dataset"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// tuningTable: idle, 4 slices cut p90 by two thirds for 10 CPU points; from 8 clients
// (0.08 searches in flight) up, 4 slices would need 95% CPU, so only concurrent search off
// stays within an 80% budget. Its clients keep few searches in flight (slow clients, fast
// queries), so any sustained load of the test's reads as 8 clients or more.
func tuningTable() autotune.Table {
	return autotune.Table{Cores: 2, Segments: 4, Results: []autotune.Measurement{
		{SliceCount: 4, Clients: 1, P90Ms: 10, CPUPercent: 20, QPS: 5, InFlight: 0.01},
		{SliceCount: 4, Clients: 8, P90Ms: 30, CPUPercent: 95, QPS: 40, InFlight: 0.08},
		{SliceCount: 1, Clients: 1, P90Ms: 30, CPUPercent: 10, QPS: 4, InFlight: 0.01},
		{SliceCount: 1, Clients: 8, P90Ms: 60, CPUPercent: 50, QPS: 30, InFlight: 0.08},
	}}
}

// TestAutoTuningFollowsTheLoad: idle, the tuner applies 4 slices; under a sustained query
// load it moves to concurrent search off; when the load stops it returns to 4 slices —
// with status, Tuned condition and Events each time.
func TestAutoTuningFollowsTheLoad(t *testing.T) {
	// This test is about the table's own predictions: no dwell between changes, and no
	// correction from live CPU within the test.
	e, osClient, vi, queries := tunedIndex(t, "tuned", tuningTable(), v1alpha1.TuningSpec{CPUHeadroomPercent: 20, MinGainPerCPUPercent: "1", HysteresisPercent: 5,
		MinDwell: &metav1.Duration{}, CPUWindow: &metav1.Duration{Duration: time.Hour}})

	waitSlices := func(want int32, mode string) {
		t.Helper()
		e.eventually(60*time.Second, func() (bool, string) {
			if err := e.k8s.Get(e.ctx, clientKey(vi), vi); err != nil {
				return false, err.Error()
			}
			live := liveIndex(t, osClient, vi.Spec.IndexName).Settings
			ts := vi.Status.Tuning
			if ts == nil {
				return false, "no tuning status yet"
			}
			ok := ts.SliceCount == want && live["index.search.concurrent_segment_search.mode"] == mode
			return ok, fmt.Sprintf("tuned %d (%s) at %s clients / %s in flight / %s qps; index mode %s slices %s", ts.SliceCount, ts.Reason, ts.LoadClients, ts.LiveInFlight, ts.LiveQueriesPerSecond,
				live["index.search.concurrent_segment_search.mode"], live["index.search.concurrent.max_slice_count"])
		})
	}
	waitSlices(4, "all")
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionTuned, metav1.ConditionTrue, v1alpha1.ReasonTuned, 10*time.Second)
	if s := liveIndex(t, osClient, vi.Spec.IndexName).Settings["index.search.concurrent.max_slice_count"]; s != "4" {
		t.Errorf("idle: max_slice_count %s, want 4", s)
	}

	// Sustained load well above 40 qps, until the test says stop.
	stop := searchLoad(t, osClient, vi.Spec.IndexName, queries, 3)
	waitSlices(1, "none")
	// kubectl's Slices column says it too (mode none has no max_slice_count).
	e.eventually(10*time.Second, func() (bool, string) {
		_ = e.k8s.Get(e.ctx, clientKey(vi), vi)
		got := printedColumn(t, "vectorpilot.io_vectorindices.yaml", "Slices", vi)
		return got == "off", fmt.Sprintf("Slices column %q, want off", got)
	})
	if !strings.Contains(vi.Status.Tuning.Reason, "cheapest setting under 80% CPU") && !strings.Contains(vi.Status.Tuning.Reason, "least CPU") {
		t.Errorf("under load the reason should be the CPU budget: %q", vi.Status.Tuning.Reason)
	}
	stop()
	waitSlices(4, "all")

	var tunedEvents int
	for _, ev := range e.events(vi.Name) {
		if ev.Reason == "Tuned" {
			tunedEvents++
		}
	}
	if tunedEvents < 3 {
		t.Errorf("Tuned events = %d, want one per change (4, off, 4)", tunedEvents)
	}
	if d := tunerDecisions(t, vi); d["changed"] < 3 {
		t.Errorf("tuner decisions %v, want at least 3 changed (4, off, 4)", d)
	}
}

// tunerDecisions reads vectorpilot_tuner_decisions_total of one index from the metrics
// registry the operator serves, by kind.
func tunerDecisions(t *testing.T, vi *v1alpha1.VectorIndex) map[string]float64 {
	return testsupport.IndexSeries(t, "vectorpilot_tuner_decisions_total", vi.Namespace, vi.Name, func(l map[string]string) string { return l["kind"] })
}

func TestAutoTuningWithoutResultsSaysSoAndKeepsTheSpec(t *testing.T) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	e.cluster("vectors", url)
	vi := luceneIndex(e, "untuned")
	vi.Spec.Tuning = &v1alpha1.TuningSpec{Mode: v1alpha1.TuningAuto, CPUHeadroomPercent: 20, MinGainPerCPUPercent: "1",
		BenchmarkRef: &v1alpha1.BenchmarkReference{ConfigMap: v1alpha1.ConfigMapKeyReference{Name: "missing", Key: "results.json"}}}
	e.create(vi)
	e.waitIndexReady(vi)
	e.waitCondition(vi, func() []metav1.Condition { return vi.Status.Conditions }, v1alpha1.ConditionTuned, metav1.ConditionFalse, v1alpha1.ReasonBenchmarkMissing, 30*time.Second)
	if vi.Status.MaxSliceCount != 2 {
		t.Errorf("without results the spec's 2 slices must apply, status says %d", vi.Status.MaxSliceCount)
	}
}

// tunedIndex starts the operator on the local node and makes a one-shard index of 2,000
// vectors tuned (mode Auto) from table, delivered in a ConfigMap, with tuning's targets.
func tunedIndex(t *testing.T, name string, table autotune.Table, tuning v1alpha1.TuningSpec) (*env, *opensearch.Client, *v1alpha1.VectorIndex, dataset.Vectors) {
	e := startOperator(t)
	url := testsupport.OpenSearchURL(t)
	osClient := osClient(t, url)
	e.cluster("vectors", url)
	raw, _ := json.Marshal(table)
	e.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-results", Namespace: e.ns}, Data: map[string]string{"results.json": string(raw)}})
	vi := luceneIndex(e, name)
	vi.Spec.Shards = 1
	tuning.Mode = v1alpha1.TuningAuto
	tuning.BenchmarkRef = &v1alpha1.BenchmarkReference{ConfigMap: v1alpha1.ConfigMapKeyReference{Name: name + "-results", Key: "results.json"}}
	vi.Spec.Tuning = &tuning
	e.create(vi)
	e.waitIndexReady(vi)
	base, queries := dataset.Generate(dataset.Spec{Count: 2000, Queries: 50, Dim: 32, Seed: 11})
	ingest(t, osClient, vi.Spec.IndexName, base)
	return e, osClient, vi, queries
}

// searchLoad runs k-NN queries from the given number of closed-loop clients until the
// returned stop is called (or the test ends).
func searchLoad(t *testing.T, c *opensearch.Client, index string, queries dataset.Vectors, clients int) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for n := 0; n < clients; n++ {
		wg.Add(1)
		go func(n int) {
			defer wg.Done()
			for q := n; ctx.Err() == nil; q = (q + 1) % queries.Len() {
				_, _ = c.Search(ctx, index, opensearch.KNNQuery("embedding", queries.At(q), 10))
			}
		}(n)
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// fasterMachineTable is a table measured on a much faster machine than this one: it
// predicts a few percent of CPU for any setting at the loads measured, so every setting
// fits a 20% budget and 4 slices, the fastest, are chosen. Here the nodes burn far more.
func fasterMachineTable() autotune.Table {
	return autotune.Table{Cores: 16, Segments: 4, Results: []autotune.Measurement{
		{SliceCount: 4, Clients: 1, P90Ms: 2, CPUPercent: 1.5, QPS: 600},
		{SliceCount: 4, Clients: 4, P90Ms: 3, CPUPercent: 5, QPS: 1800},
		{SliceCount: 1, Clients: 1, P90Ms: 4, CPUPercent: 1, QPS: 300},
		{SliceCount: 1, Clients: 4, P90Ms: 6, CPUPercent: 3, QPS: 900},
	}}
}

// TestAutoTuningCorrectsAWrongTableFromLiveCPU closes the loop: tuned from a table of
// another machine, the index gets 4 slices; under a query load the nodes' live CPU runs far
// above what the table predicts for 4 slices, for longer than cpuWindow, so the tuner
// corrects the table's CPU by the observed ratio (status, Event CPUCorrected), and 4 slices
// no longer fit the budget: it steps to concurrent search off — once the dwell after its
// last change has passed, and never more than once per dwell.
func TestAutoTuningCorrectsAWrongTableFromLiveCPU(t *testing.T) {
	const window, dwell = 10 * time.Second, 40 * time.Second
	e, osClient, vi, queries := tunedIndex(t, "closed-loop", fasterMachineTable(), v1alpha1.TuningSpec{CPUHeadroomPercent: 80, MinGainPerCPUPercent: "0", HysteresisPercent: 5,
		MinDwell: &metav1.Duration{Duration: dwell}, CPUWindow: &metav1.Duration{Duration: window}, CPUTolerancePercent: 25})
	tuning := func() *v1alpha1.TuningStatus {
		if err := e.k8s.Get(e.ctx, clientKey(vi), vi); err != nil {
			t.Fatal(err)
		}
		return vi.Status.Tuning
	}
	e.eventually(60*time.Second, func() (bool, string) {
		ts := tuning()
		return ts != nil && ts.SliceCount == 4, fmt.Sprintf("tuning %+v", ts)
	})
	firstDecision := tuning().DecidedAt.Time

	loadStart := time.Now()
	stop := searchLoad(t, osClient, vi.Spec.IndexName, queries, 3)
	defer stop()
	var corrected, stepped time.Time
	var atCorrection v1alpha1.TuningCPU
	e.eventually(3*time.Minute, func() (bool, string) {
		ts := tuning()
		if ts.CPU != nil && ts.CPU.Correction != "1.00" && corrected.IsZero() {
			corrected, atCorrection = time.Now(), *ts.CPU
		}
		if ts.SliceCount == 1 && stepped.IsZero() {
			stepped = time.Now()
		}
		return !stepped.IsZero(), fmt.Sprintf("slice setting %d (%s); cpu %+v", ts.SliceCount, ts.Reason, ts.CPU)
	})
	ts := tuning()
	t.Logf("load of 3 clients from %s: live CPU %s%% vs the table's %s%% for 4 slices; correction × %s after %s (%s); "+
		"stepped to concurrent search off %s after the load started, %s after the first decision (dwell %s): %s",
		loadStart.Format(time.TimeOnly), atCorrection.ObservedPercent, atCorrection.PredictedPercent, atCorrection.Correction,
		corrected.Sub(loadStart).Round(time.Second), atCorrection.Reason, stepped.Sub(loadStart).Round(time.Second),
		ts.DecidedAt.Sub(firstDecision).Round(time.Second), dwell, ts.Reason)
	if corrected.IsZero() {
		t.Error("the setting changed without a CPU correction")
	}
	if ts.DecidedAt.Sub(firstDecision) < dwell {
		t.Errorf("changed %s after the previous change, within the %s dwell", ts.DecidedAt.Sub(firstDecision), dwell)
	}
	if c, _ := strconv.ParseFloat(ts.CPU.Correction, 64); c <= 1.25 {
		t.Errorf("correction %s: live CPU should run well above this table", ts.CPU.Correction)
	}
	e.waitEvent(vi.Name, v1alpha1.ReasonCPUCorrected)

	// Under the same load, for a whole dwell after the change: no second change.
	changedAt := ts.DecidedAt.Time
	deadline := time.Now().Add(dwell)
	for time.Now().Before(deadline) {
		ts := tuning()
		if ts.SliceCount != 1 || !ts.DecidedAt.Time.Equal(changedAt) {
			t.Fatalf("a second change within the dwell: %d (%s) at %s", ts.SliceCount, ts.Reason, ts.DecidedAt)
		}
		time.Sleep(2 * time.Second)
	}
	ts = tuning()
	t.Logf("a dwell later, still concurrent search off: live CPU %s%% vs predicted %s%% (uncorrected) × %s; %s",
		ts.CPU.ObservedPercent, ts.CPU.PredictedPercent, ts.CPU.Correction, ts.Reason)
	var changes int
	for _, ev := range e.events(vi.Name) {
		if ev.Reason == v1alpha1.ReasonTuned {
			changes++
		}
	}
	if changes != 2 {
		t.Errorf("%d Tuned events, want two: 4 slices, then off", changes)
	}
}

// TestTunerReadsTheLiveLoadInClients: under closed-loop clients the tuner reads the load
// from the index's own counters by Little's law (status.tuning): the table is a sweep
// measured on this index (20,000 vectors in 10 segments, so the query phase is a good part
// of a search, as on real indexes; concurrent search off, 1 and 2 clients), then 1 and then
// 2 clients search for 20 s each. Every reading must be the law applied to the status's
// own inputs — the searches in flight (never more than the clients: one shard) plus the
// live rate times the time outside the query phase the table measured —, and 2 clients
// must read as more than 1. How close the readings come to the true count depends on how
// steady the time outside the query phase is, which a shared machine does not hold still:
// the accuracy is measured over recorded sweeps (TestLoadSignalFollowsTheClients) and
// these readings are logged.
func TestTunerReadsTheLiveLoadInClients(t *testing.T) {
	e, osClient, vi, queries := tunedIndex(t, "load-signal", tuningTable(), v1alpha1.TuningSpec{CPUHeadroomPercent: 20, MinGainPerCPUPercent: "1",
		SliceCandidates: []int32{1}, MinDwell: &metav1.Duration{}, CPUWindow: &metav1.Duration{Duration: time.Hour}})
	base, _ := dataset.Generate(dataset.Spec{Count: 20000, Queries: 50, Dim: 32, Seed: 11})
	if err := bench.LoadInSegments(e.ctx, osClient, vi.Spec.IndexName, "embedding", base, 10, 1000, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := bench.Sweep(e.ctx, osClient, bench.SweepConfig{Index: vi.Spec.IndexName, Field: "embedding", Queries: queries, Exact: dataset.ExactKNN(base, queries, 10), K: 10,
		SliceCounts: []indexspec.Slices{indexspec.SlicesOff}, Clients: []int{1, 2}, Warmup: 2 * time.Second, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	table := autotune.Table{Cores: rep.Cores, Segments: rep.Segments}
	for _, c := range rep.Results {
		t.Logf("sweep: %d clients: %.1f qps, %.2f searches in flight", c.Clients, c.QPS, c.InFlight)
		table.Results = append(table.Results, c.Measurement)
	}
	raw, _ := json.Marshal(table)
	var cm corev1.ConfigMap
	if err := e.k8s.Get(e.ctx, clientKey(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "load-signal-results", Namespace: e.ns}}), &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["results.json"] = string(raw)
	if err := e.k8s.Update(e.ctx, &cm); err != nil {
		t.Fatal(err)
	}

	number := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("status.tuning figure %q: %v", s, err)
		}
		return v
	}
	medians := map[int]float64{}
	for _, clients := range []int{1, 2} {
		stop := searchLoad(t, osClient, vi.Spec.IndexName, queries, clients)
		time.Sleep(4 * time.Second) // the first sample after the start spans idle time
		var readings []float64
		var last time.Time
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
			if err := e.k8s.Get(e.ctx, clientKey(vi), vi); err != nil {
				t.Fatal(err)
			}
			ts := vi.Status.Tuning
			if ts == nil || ts.SampledAt == nil || ts.LoadClients == "" || ts.SampledAt.Time.Equal(last) {
				continue
			}
			last = ts.SampledAt.Time
			if ts.LoadReadBy != "searches in flight" {
				t.Fatalf("load read by %q, want searches in flight: the table has them", ts.LoadReadBy)
			}
			read, qps, inFlight := number(ts.LoadClients), number(ts.LiveQueriesPerSecond), number(ts.LiveInFlight)
			t.Logf("%d clients: read as %.2f clients (%.2f in flight, %.1f qps)", clients, read, inFlight, qps)
			if inFlight > float64(clients)+0.05 {
				t.Errorf("%d clients: %.2f searches in flight on a one-shard index: more than the clients searching", clients, inFlight)
			}
			// The status's figures are rounded to hundredths: the law over them spans what
			// their rounding leaves open (linear in the rate; piecewise in the searches in
			// flight, bending only at the table's in-flight figures, hundredths as well).
			lo, hi := math.Inf(1), math.Inf(-1)
			for _, q := range []float64{qps - 0.005, qps + 0.005} {
				for _, f := range []float64{inFlight - 0.005, inFlight, inFlight + 0.005} {
					c := autotune.ClientsInFlight(table, 1, q, f)
					lo, hi = math.Min(lo, c), math.Max(hi, c)
				}
			}
			if read < lo-0.005 || read > hi+0.005 {
				t.Errorf("%d clients: read as %.2f, Little's law on the status's own figures gives %.2f–%.2f", clients, read, lo, hi)
			}
			readings = append(readings, read)
		}
		stop()
		if len(readings) < 3 {
			t.Fatalf("%d clients: %d readings in 20 s, want a sample every resync", clients, len(readings))
		}
		slices.Sort(readings)
		medians[clients] = readings[len(readings)/2]
		t.Logf("%d clients: readings %v, median %.2f", clients, readings, medians[clients])
	}
	if medians[2] <= medians[1] {
		t.Errorf("2 clients read as %.2f, 1 client as %.2f: the reading does not follow the load", medians[2], medians[1])
	}
}
