// Package metrics holds the operator's own Prometheus metrics, registered with
// controller-runtime's registry so they are served on the manager's metrics endpoint.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// OpenSearchRequests counts HTTP requests the operator sent to each cluster: the cost of
// managing it, and the figure to watch for hot loops.
var OpenSearchRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "vectorpilot_opensearch_requests_total",
	Help: "HTTP requests sent by the operator to an OpenSearch cluster.",
}, []string{"namespace", "cluster"})

func init() {
	ctrlmetrics.Registry.MustRegister(OpenSearchRequests)
}

// SliceCount is the slice setting the operator applies to an index, by where it came from.
var SliceCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "vectorpilot_index_slice_count",
	Help: "Slice setting applied to an index (1 = concurrent search off, 0 = Lucene's default slicing, N = N slices), by source.",
}, []string{"namespace", "index", "source"})

// TunerDecisions counts the autotuner's decisions that changed or kept an index's setting.
var TunerDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "vectorpilot_tuner_decisions_total",
	Help: "Autotuner decisions per index, by kind (changed, kept).",
}, []string{"namespace", "index", "kind"})

func init() {
	ctrlmetrics.Registry.MustRegister(SliceCount, TunerDecisions)
}
