package controllers

import (
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vectorpilot/vectorpilot/api/v1alpha1"
	"github.com/vectorpilot/vectorpilot/internal/autotune"
	"github.com/vectorpilot/vectorpilot/internal/harness/testsupport"
	"github.com/vectorpilot/vectorpilot/internal/indexspec"
	"github.com/vectorpilot/vectorpilot/internal/metrics"
	"github.com/vectorpilot/vectorpilot/internal/opensearch"
)

// TestDecideTuning drives the tuner's decision from what a reconcile read — the table, the
// index's and the nodes' counters, the last decision's status — without a cluster: the
// live load by Little's law, samples that only start the next interval, the dwell, the
// closed loop's correction, and a spec the tuner cannot use.
func TestDecideTuning(t *testing.T) {
	// 4 slices: 10 ms at 1 client for 20 % CPU, 95 % at 8 clients; off: 30 ms, 10 % → 50 %.
	// One client keeps 0.5 searches in flight at either setting (50 ms outside the query
	// phase at 10 qps).
	table := autotune.Table{Cores: 2, Results: []autotune.Measurement{
		{SliceCount: 4, Clients: 1, P90Ms: 10, CPUPercent: 20, QPS: 10, InFlight: 0.5},
		{SliceCount: 4, Clients: 8, P90Ms: 30, CPUPercent: 95, QPS: 80, InFlight: 4},
		{SliceCount: 1, Clients: 1, P90Ms: 30, CPUPercent: 10, QPS: 10, InFlight: 0.5},
		{SliceCount: 1, Clients: 8, P90Ms: 60, CPUPercent: 50, QPS: 80, InFlight: 4},
	}}
	spec := v1alpha1.TuningSpec{Mode: v1alpha1.TuningAuto, CPUHeadroomPercent: 20, MinGainPerCPUPercent: "1", HysteresisPercent: 5,
		CPUWindow: &metav1.Duration{Duration: time.Minute}, CPUTolerancePercent: 25}
	t0 := metav1.NewTime(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	nodes := func(cpuMillis int64) opensearch.NodeStats {
		return opensearch.NodeStats{ProcessCPUMillis: cpuMillis, Processors: 2}
	}
	// A sample 10 s after prev whose index served searches (count, query ms) meanwhile.
	sampled := func(slices int32, searches, queryMillis int64, cpuMillis int64) *v1alpha1.TuningStatus {
		return &v1alpha1.TuningStatus{SliceCount: slices, QueryTotal: searches, QueryMillis: queryMillis, SampledAt: &t0, DecidedAt: &t0,
			CPU: &v1alpha1.TuningCPU{ProcessCPUMillis: cpuMillis, Processors: 2, Correction: "1.00"}}
	}
	for _, tc := range []struct {
		name     string
		spec     func(*v1alpha1.TuningSpec)
		prev     *v1alpha1.TuningStatus
		stats    opensearch.IndexStats
		cpu      int64
		current  indexspec.Slices
		now      metav1.Time
		slices   int32
		load     string // status.tuning.loadClients
		reason   string
		decided  metav1.Time
		corrects bool
		err      string
	}{
		{name: "first sample: no load measured yet, 4 slices fit idle",
			stats: opensearch.IndexStats{Searches: 100, SearchMillis: 500}, cpu: 1000, current: 2, now: t0, slices: 4, load: "", reason: "cuts p90", decided: t0},
		{name: "8 clients by Little's law: 40 in flight over 10 s at 80 qps, only off fits",
			prev: sampled(4, 100, 500, 1000), stats: opensearch.IndexStats{Searches: 900, SearchMillis: 40500}, cpu: 10000, current: 4, now: at(10 * time.Second),
			slices: 1, load: "8.00", reason: "cheapest setting under 80% CPU", decided: at(10 * time.Second)},
		{name: "counters went back (a restart): the sample only starts the next interval",
			prev: sampled(4, 100, 500, 1000), stats: opensearch.IndexStats{Searches: 50, SearchMillis: 100}, cpu: 1500, current: 4, now: at(10 * time.Second),
			slices: 4, load: "", decided: t0},
		{name: "a status without query time (an older operator): no reading from it",
			prev: &v1alpha1.TuningStatus{SliceCount: 4, QueryTotal: 100, SampledAt: &t0, DecidedAt: &t0}, stats: opensearch.IndexStats{Searches: 900, SearchMillis: 40500},
			cpu: 1000, current: 4, now: at(10 * time.Second), slices: 4, load: "", decided: t0},
		{name: "the dwell keeps 4 slices under load 10 s after the last change",
			spec: func(s *v1alpha1.TuningSpec) { s.MinDwell = &metav1.Duration{Duration: 5 * time.Minute} },
			prev: sampled(4, 100, 500, 1000), stats: opensearch.IndexStats{Searches: 900, SearchMillis: 40500}, cpu: 10000, current: 4, now: at(10 * time.Second),
			slices: 4, load: "8.00", reason: "kept 4 slices until 2026-11-27T12:05:00Z", decided: t0},
		{name: "live CPU over four times the table's for longer than the window: corrected",
			prev: func() *v1alpha1.TuningStatus {
				p := sampled(4, 100, 500, 1000)
				since := at(-2 * time.Minute)
				p.CPU.DisagreeingSince, p.CPU.Above, p.CPU.WindowObserved, p.CPU.WindowPredicted = &since, true, "9600", "2400"
				return p
			}(),
			stats: opensearch.IndexStats{Searches: 200, SearchMillis: 5500}, cpu: 18000, current: 4, now: at(10 * time.Second),
			slices: 1, load: "1.00", corrects: true, decided: at(10 * time.Second)},
		{name: "a gain per CPU point the tuner cannot read",
			spec: func(s *v1alpha1.TuningSpec) { s.MinGainPerCPUPercent = "lots" }, stats: opensearch.IndexStats{}, current: 4, now: t0, err: "spec.tuning.minGainPerCpuPercent"},
		{name: "candidates the table never measured",
			spec: func(s *v1alpha1.TuningSpec) { s.SliceCandidates = []int32{16} }, stats: opensearch.IndexStats{}, current: 4, now: t0, err: "no measured setting"},
	} {
		s := spec
		if tc.spec != nil {
			tc.spec(&s)
		}
		got, err := decideTuning(s, tc.prev, table, tc.stats, nodes(tc.cpu), tc.current, tc.now)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want one about %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		st := got.status
		if st.SliceCount != tc.slices || st.LoadClients != tc.load || !strings.Contains(st.Reason, tc.reason) || !st.DecidedAt.Equal(&tc.decided) {
			t.Errorf("%s: slices %d, load %q, reason %q, decided %s; want %d, %q, reason with %q, decided %s",
				tc.name, st.SliceCount, st.LoadClients, st.Reason, st.DecidedAt, tc.slices, tc.load, tc.reason, tc.decided)
		}
		if (got.corrected != "") != tc.corrects || (tc.corrects && st.CPU.CorrectedAt == nil) {
			t.Errorf("%s: correction %q (factor %.2f), want a change: %v", tc.name, got.corrected, got.correction, tc.corrects)
		}
		if st.QueryTotal != tc.stats.Searches || st.QueryMillis != tc.stats.SearchMillis || !st.SampledAt.Equal(&tc.now) || st.CPU.ProcessCPUMillis != tc.cpu {
			t.Errorf("%s: the status must keep this sample's counters for the next one: %+v", tc.name, st)
		}
	}
}

// TestExportedTableIsTheTableTunedFrom: the benchmark table's series are the cells of the
// table the index is tuned from now; cells of an earlier table (another run, other slice
// settings or client levels) go with it.
func TestExportedTableIsTheTableTunedFrom(t *testing.T) {
	vi := &v1alpha1.VectorIndex{ObjectMeta: metav1.ObjectMeta{Namespace: "export-ns", Name: "export-table"}}
	defer metrics.ForgetIndex(vi.Namespace, vi.Name)
	cell := func(slices indexspec.Slices, clients int, p90 float64) autotune.Measurement {
		return autotune.Measurement{SliceCount: slices, Clients: clients, P90Ms: p90, CPUPercent: 10}
	}
	exportTable(vi, autotune.Table{Results: []autotune.Measurement{cell(1, 1, 30), cell(2, 1, 20), cell(2, 4, 40)}})
	exportTable(vi, autotune.Table{Results: []autotune.Measurement{cell(1, 1, 25), cell(4, 1, 10)}})

	got := testsupport.IndexSeries(t, "vectorpilot_benchmark_p90_seconds", vi.Namespace, vi.Name, func(l map[string]string) string {
		return l["slices"] + "x" + l["clients"]
	})
	want := map[string]float64{"1x1": 0.025, "4x1": 0.010}
	if !maps.Equal(got, want) {
		t.Errorf("p90 series by slices x clients: %v, want %v", got, want)
	}
}
