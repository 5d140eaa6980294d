package metrics

import (
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vectorpilot/vectorpilot/internal/version"
)

// TestForgetIndexLeavesNoSeries: once a VectorIndex is deleted, no series of the operator's
// registry names it — whatever set them (the reconcile, the tuner, its closed loop).
func TestForgetIndexLeavesNoSeries(t *testing.T) {
	const ns, index = "forget-ns", "forget-me"
	SliceCount.WithLabelValues(ns, index, "tuner").Set(2)
	TunerDecisions.WithLabelValues(ns, index, "changed").Inc()
	IndexReady.WithLabelValues(ns, "c", index, "").Set(1)
	TuningHeadroom.WithLabelValues(ns, "c", index).Set(20)
	BenchmarkP90.WithLabelValues(ns, index, "1", "1").Set(0.01)
	BenchmarkCPU.WithLabelValues(ns, index, "1", "1").Set(10)
	TuningObservedCPU.WithLabelValues(ns, index).Set(12)
	TuningPredictedCPU.WithLabelValues(ns, index).Set(10)
	TuningCPUCorrection.WithLabelValues(ns, index).Set(1.2)
	if n := seriesOf(t, ns, index); n != 9 {
		t.Fatalf("%d series set, want 9", n)
	}
	ForgetIndex(ns, index)
	if n := seriesOf(t, ns, index); n != 0 {
		t.Errorf("%d series of the deleted index are left", n)
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
