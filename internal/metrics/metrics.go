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
