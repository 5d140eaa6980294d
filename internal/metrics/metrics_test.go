package metrics

import (
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vectorpilot/vectorpilot/internal/version"
)

// TestForgetIndexLeavesNoSeries: once a VectorIndex is deleted, no series of the operator's
// registry names it — whatever set them (the reconcile, the tuner, its closed loop).
func TestForgetIndexLeavesNoSeries(t *testing.T) {
	const ns, index = "forget-ns", "forget-me"
	SetSliceCount(ns, index, "tuner", 2)
	TunerDecisions.WithLabelValues(ns, index, "changed").Inc()
	SetIndexReady(ns, "c", index, "", true)
	TuningHeadroom.WithLabelValues(ns, "c", index).Set(20)
	BenchmarkP90.WithLabelValues(ns, index, "1", "1").Set(0.01)
	BenchmarkCPU.WithLabelValues(ns, index, "1", "1").Set(10)
	TuningObservedCPU.WithLabelValues(ns, index).Set(12)
	TuningPredictedCPU.WithLabelValues(ns, index).Set(10)
	TuningCPUCorrection.WithLabelValues(ns, index).Set(1.2)
	IndexRecall.WithLabelValues(ns, "c", index, "v", "10").Set(0.9)
	IndexRecallTarget.WithLabelValues(ns, "c", index, "v", "10").Set(0.95)
	RecallSearches.WithLabelValues(ns, "c", index).Add(20)
	if n := seriesOf(t, ns, index); n != 12 {
		t.Fatalf("%d series set, want 12", n)
	}
	ForgetIndex(ns, index)
	if n := seriesOf(t, ns, index); n != 0 {
		t.Errorf("%d series of the deleted index are left", n)
	}
}

// TestIndexSeriesReplaceTheirLast: an index keeps one readiness series and one slice
// series, whatever reasons and sources it had before; other indexes' series stay.
func TestIndexSeriesReplaceTheirLast(t *testing.T) {
	const ns, index, other = "replace-ns", "replace-me", "other"
	SetIndexReady(ns, "c", other, "", true)
	SetIndexReady(ns, "c", index, "Creating", false)
	SetIndexReady(ns, "d", index, "", true)
	SetSliceCount(ns, index, "spec", 1)
	SetSliceCount(ns, index, "autotune", 4)
	defer ForgetIndex(ns, other)
	if n, o := seriesOf(t, ns, index), seriesOf(t, ns, other); n != 2 || o != 1 {
		t.Fatalf("%d series of the index, %d of the other; want 2 and 1", n, o)
	}
	if got := testutil.ToFloat64(indexReady.WithLabelValues(ns, "d", index, "")); got != 1 {
		t.Errorf("readiness %v, want 1", got)
	}
	if got := testutil.ToFloat64(sliceCount.WithLabelValues(ns, index, "autotune")); got != 4 {
		t.Errorf("slices %v, want 4", got)
	}
	ForgetIndex(ns, index)
	if n, o := seriesOf(t, ns, index), seriesOf(t, ns, other); n != 0 || o != 1 {
		t.Errorf("after ForgetIndex: %d series of the index, %d of the other; want 0 and 1", n, o)
	}
}

// BenchmarkSetIndexReady is one reconcile's readiness update in a fleet of n indexes: its
// cost must not grow with the fleet (DeletePartialMatch's did: 28 µs at 500, 332 µs at 5,000).
func BenchmarkSetIndexReady(b *testing.B) {
	for _, n := range []int{500, 2000, 5000} {
		b.Run(fmt.Sprintf("indexes=%d", n), func(b *testing.B) {
			ns := fmt.Sprintf("bench-%d", n)
			for i := range n {
				SetIndexReady(ns, "c", fmt.Sprintf("idx-%05d", i), "", true)
			}
			b.Cleanup(func() {
				for i := range n {
					ForgetIndex(ns, fmt.Sprintf("idx-%05d", i))
				}
			})
			b.ResetTimer()
			for i := range b.N {
				SetIndexReady(ns, "c", fmt.Sprintf("idx-%05d", i%n), "", true)
			}
		})
	}
}

// TestIndexSeriesUnderConcurrentReconciles: reconciles of different indexes write and drop
// their series at once (the controller runs several workers); each index ends with exactly
// the series of its last writes, and a forgotten index with none.
func TestIndexSeriesUnderConcurrentReconciles(t *testing.T) {
	const ns, workers, perWorker = "concurrent-ns", 8, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				index := fmt.Sprintf("idx-%d-%d", w, i)
				for round, reason := range []string{"Creating", "Progressing", ""} {
					SetIndexReady(ns, "c", index, reason, reason == "")
					SetSliceCount(ns, index, "spec", float64(round))
					SetBenchmarkTable(ns, index, []BenchmarkCell{{Slices: fmt.Sprint(round), Clients: "1"}, {Slices: "1", Clients: "1"}})
				}
				if i%2 == 1 {
					ForgetIndex(ns, index)
				}
			}
		}()
	}
	wg.Wait()
	for w := range workers {
		for i := range perWorker {
			index := fmt.Sprintf("idx-%d-%d", w, i)
			// Ready, slices and 2 × 2 table cells (slices 2 and 1, at 1 client).
			want := 6
			if i%2 == 1 {
				want = 0
			}
			if got := seriesOf(t, ns, index); got != want {
				t.Errorf("%s: %d series, want %d", index, got, want)
			}
			ForgetIndex(ns, index)
		}
	}
}

// BenchmarkForgetUntunedIndex: what every reconcile of an index without tuning or recall
// spends dropping their series, beside a fleet of tuned indexes (a 4 × 4 table each).
func BenchmarkForgetUntunedIndex(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("tuned=%d", n), func(b *testing.B) {
			ns := fmt.Sprintf("bench-tuned-%d", n)
			for i := range n {
				index := fmt.Sprintf("idx-%05d", i)
				TuningHeadroom.WithLabelValues(ns, "c", index).Set(20)
				TuningCPUCorrection.WithLabelValues(ns, index).Set(1)
				IndexRecall.WithLabelValues(ns, "c", index, "v", "10").Set(0.9)
				for _, slices := range []string{"0", "1", "2", "4"} {
					for _, clients := range []string{"1", "2", "4", "8"} {
						BenchmarkP90.WithLabelValues(ns, index, slices, clients).Set(0.01)
						BenchmarkCPU.WithLabelValues(ns, index, slices, clients).Set(10)
					}
				}
			}
			b.Cleanup(func() {
				for i := range n {
					ForgetIndex(ns, fmt.Sprintf("idx-%05d", i))
				}
			})
			b.ResetTimer()
			for range b.N {
				ForgetTuning(ns, "untuned")
				ForgetRecall(ns, "untuned")
			}
		})
	}
}

// seriesOf counts the series in the operator's registry labelled with namespace and index.
func seriesOf(t *testing.T, namespace, index string) int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == namespace && labels["index"] == index {
				n++
			}
		}
	}
	return n
}

// TestBuildInfoSaysWhichOperatorRuns: one series, value 1, labelled with the release.
func TestBuildInfoSaysWhichOperatorRuns(t *testing.T) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "vectorpilot_build_info" {
			continue
		}
		if len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Fatalf("vectorpilot_build_info: %v", f.GetMetric())
		}
		for _, l := range f.GetMetric()[0].GetLabel() {
			if l.GetName() == "version" && l.GetValue() != version.Version {
				t.Errorf("version label %q, want %q", l.GetValue(), version.Version)
			}
		}
		return
	}
	t.Error("no vectorpilot_build_info in the operator's registry")
}
