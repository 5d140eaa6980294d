package testsupport

import (
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// IndexSeries reads the operator's metric of one VectorIndex from the registry it serves:
// each series labelled with the namespace and index, by key of its labels, its value (a
// counter's or a gauge's).
func IndexSeries(t testing.TB, metric, namespace, index string, key func(labels map[string]string) string) map[string]float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == namespace && labels["index"] == index {
				out[key(labels)] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return out
}
